import test from 'ava';
import { REPORTED_BY_CLI, inDisplayOrder, usageSections, type ModelUsageRow, type Receipt } from '../../plugins/jobs/receipts/receipt-assembly.ts';

/**
 * The arithmetic of a receipt's llm and cost sections, without a database: what a coding CLI said a
 * call cost (`reported_cost_usd`) is shown beside svc's own pricing and never enters it.
 */
const row = (model: string, extra: Partial<ModelUsageRow> = {}): ModelUsageRow => ({
  model,
  calls: 1,
  input_tokens: 1_000_000,
  output_tokens: 100_000,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  reasoning_tokens: 0,
  duration_ms: 0,
  providers: [],
  ...extra,
});

test("an unpriced model with the CLI's own figure: cost_usd stays null, the figure is shown and marked, the base cost stays 0", (t) => {
  const { llm, cost } = usageSections([row('acme-coder-1', { reported_cost_usd: 0.0123 })]);
  t.like(llm.models['acme-coder-1'], { cost_usd: null, reported_cost_usd: 0.0123, priced_as: REPORTED_BY_CLI });
  t.is(REPORTED_BY_CLI, 'reported by the CLI');
  t.like(cost, {
    base_cost_usd: 0,
    billed_cost: { currency: 'USD', amount: 0 },
    pricing: 'unpriced',
    unpriced_models: ['acme-coder-1'],
    reported_cost_usd: 0.0123,
  });
});

test("a priced model's cost comes from the price table whatever the CLI reported; the figure is shown beside it", (t) => {
  const without = usageSections([row('gpt-4o')]);
  const withFigure = usageSections([row('gpt-4o', { reported_cost_usd: 99 })]);
  // 1M in × $2.50 + 0.1M out × $10
  t.is(without.cost.base_cost_usd, 3.5);
  t.deepEqual(withFigure.cost.base_cost_usd, without.cost.base_cost_usd);
  t.deepEqual(withFigure.cost.billed_cost, without.cost.billed_cost);
  t.like(withFigure.llm.models['gpt-4o'], { cost_usd: 3.5, priced_as: 'gpt-4o', reported_cost_usd: 99 });
  t.like(withFigure.cost, { pricing: 'priced', unpriced_models: [], reported_cost_usd: 99 });
  t.like(without.llm.models['gpt-4o'], { reported_cost_usd: null, priced_as: 'gpt-4o' });
  t.is(without.cost.reported_cost_usd, null);
});

test('no figure from the CLI: reported_cost_usd is null on the model and in the cost section, and an unpriced model is not marked', (t) => {
  const { llm, cost } = usageSections([row('acme-coder-1', { reported_cost_usd: null }), row('other/thing')]);
  t.like(llm.models['acme-coder-1'], { cost_usd: null, reported_cost_usd: null, priced_as: null });
  t.like(llm.models['other/thing'], { cost_usd: null, reported_cost_usd: null, priced_as: null });
  t.is(cost.reported_cost_usd, null);
  t.is(usageSections([]).cost.reported_cost_usd, null);
});

test('figures add up across models, rounded to the micro-dollar once, like base_cost_usd', (t) => {
  const rows = [row('acme-coder-1', { reported_cost_usd: 0.0000004 }), row('acme-coder-2', { reported_cost_usd: 0.1000004 }), row('gpt-4o')];
  const { llm, cost } = usageSections(rows);
  t.is(llm.models['acme-coder-1'].reported_cost_usd, 0);
  t.is(llm.models['acme-coder-2'].reported_cost_usd, 0.1);
  // The total is rounded once, like base_cost_usd: 0.0000008 → 0.000001.
  t.is(cost.reported_cost_usd, 0.100001);
  t.like(cost, { base_cost_usd: 3.5, pricing: 'partial', unpriced_models: ['acme-coder-1', 'acme-coder-2'] });
});

/** The same value with every object's keys in reverse order (as jsonb might hand them back). */
const reversed = (v: unknown): unknown =>
  v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(
        Object.entries(v)
          .reverse()
          .map(([k, x]) => [k, reversed(x)]),
      )
    : v;

test('display order: reported_cost_usd follows cost_usd on a model and unpriced_models in the cost section', (t) => {
  const { llm, cost } = usageSections([row('acme-coder-1', { reported_cost_usd: 0.5 })]);
  const receipt = { receipt_version: 1, llm, cost } as unknown as Receipt;
  const shown = inDisplayOrder(reversed(receipt) as Receipt);
  t.deepEqual(Object.keys(llm.models['acme-coder-1']), Object.keys(shown.llm.models['acme-coder-1']), 'assembled in display order');
  t.deepEqual(Object.keys(shown.llm.models['acme-coder-1']), [
    'calls',
    'input_tokens',
    'output_tokens',
    'cache_read_tokens',
    'cache_write_tokens',
    'reasoning_tokens',
    'duration_ms',
    'providers',
    'cost_usd',
    'reported_cost_usd',
    'priced_as',
  ]);
  t.deepEqual(Object.keys(cost), Object.keys(shown.cost), 'assembled in display order');
  t.deepEqual(Object.keys(shown.cost), ['base_cost_usd', 'billed_cost', 'pricing', 'unpriced_models', 'reported_cost_usd', 'price_table', 'exchange_rate']);
});
