import test from 'ava';
import { PRICES, costMicroUsd, microToUsd, priceOf } from '../../domain/pricing/prices.ts';

test('priceOf: exact id, then the longest table id the model starts with up to a boundary', (t) => {
  t.is(priceOf('gpt-4o')?.id, 'gpt-4o');
  t.is(priceOf('gpt-4o-2024-08-06')?.id, 'gpt-4o');
  t.is(priceOf('gpt-4o-mini-2024-07-18')?.id, 'gpt-4o-mini');
  t.is(priceOf('claude-sonnet-4-5-20250929')?.id, 'claude-sonnet-4');
  t.is(priceOf('claude-opus-4-1-20250805')?.id, 'claude-opus-4');
  t.is(priceOf('claude-opus-4-5-20251101')?.id, 'claude-opus-4-5');
  t.is(priceOf('gpt-4.1-nano-2025-04-14')?.id, 'gpt-4.1-nano');
  t.is(priceOf('o3-pro')?.id, 'o3-pro');
  t.is(priceOf('gemini-2.5-pro@latest')?.id, 'gemini-2.5-pro');
});

test('priceOf: case and a vendor/ prefix are ignored; no boundary or no entry is unpriced', (t) => {
  t.is(priceOf('Anthropic/Claude-Sonnet-4')?.id, 'claude-sonnet-4');
  t.deepEqual(priceOf('  GPT-5 '), { id: 'gpt-5', price: PRICES['gpt-5'] });
  t.is(priceOf('gpt-4oxyz'), null);
  t.is(priceOf('gpt-4'), null);
  t.is(priceOf('acme-llm-7'), null);
  t.is(priceOf(''), null);
});

test('cost: tokens × USD per million, kept to the micro-dollar', (t) => {
  const micro = costMicroUsd(PRICES['claude-sonnet-4'], {
    input_tokens: 1_000_000,
    output_tokens: 200_000,
    cache_read_tokens: 500_000,
    cache_write_tokens: 100_000,
  });
  t.is(microToUsd(micro), 6.525);
  t.is(microToUsd(costMicroUsd(PRICES['gpt-5-nano'], { input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0 })), 0);
  t.is(microToUsd(costMicroUsd(PRICES['gpt-5'], { input_tokens: 3, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 })), 0.000004);
});
