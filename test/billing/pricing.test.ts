import test from 'ava';
import { assertError } from '../orgs/helpers.ts';
import { claimed, complete } from '../jobs/claim-helpers.ts';
import { receiptOf, recordUsage, postUsage } from '../jobs/receipt-helpers.ts';
import { newJob } from '../jobs/claim-helpers.ts';
import { PRICES } from '../../domain/pricing/prices.ts';
import { billingWorld, postCard, postRate, type BillingWorld } from './helpers.ts';

let w: BillingWorld;
test.before(async () => {
  w = await billingWorld('pricing');
});
test.after.always(() => w?.ctx.srv.stop());

test.serial('the seed card is the built-in table, in force since the epoch, with its provenance stated', async (t) => {
  const list = await w.admin.get('/admin/pricing/rate-cards');
  t.is(list.statusCode, 200, JSON.stringify(list.body));
  const seed = list.body.data.find((c: any) => c.id === 'builtin-2025-11');
  t.truthy(seed);
  t.is(seed.effective_at, new Date(0).toISOString());
  t.regex(seed.provenance, /not verified/);
  t.deepEqual(seed.models['claude-sonnet-4'], PRICES['claude-sonnet-4']);
  t.is((await w.admin.get('/admin/pricing/rate-cards/current')).body.id, 'builtin-2025-11');
  t.is((await w.admin.get('/admin/pricing/rate-cards/builtin-2025-11')).body.name, seed.name);
  assertError(t, await w.admin.get('/admin/pricing/rate-cards/rc_nope'), 404, 'rate card rc_nope not found');
});

test.serial('pricing routes: system administrator only; negative prices and rates are 400 naming the field', async (t) => {
  assertError(t, await w.owner.api.get('/admin/pricing/rate-cards'), 403, 'this operation needs the system administrator');
  assertError(t, await w.owner.api.post('/admin/pricing/exchange-rates', { currency: 'EUR', rate_to_usd: 1.1 }), 403, /system administrator/);
  const bad = (models: unknown, compute: unknown = {}) => w.admin.post('/admin/pricing/rate-cards', { name: 'x', provenance: 'y', models, compute });
  assertError(t, await bad({ 'gpt-x': { input: -1, output: 1, cache_read: 0 } }), 400, /"models.gpt-x.input" must be greater than or equal to 0/);
  assertError(
    t,
    await bad({ 'gpt-x': { input: 1, output: 1, cache_read: 0, reasoning: -0.5 } }),
    400,
    /"models.gpt-x.reasoning" must be greater than or equal to 0/,
  );
  assertError(t, await bad({}, { large: -2 }), 400, /"compute.large" must be greater than or equal to 0/);
  assertError(t, await w.admin.post('/admin/pricing/exchange-rates', { currency: 'EUR', rate_to_usd: -1 }), 400, /"rate_to_usd" must be a positive number/);
  assertError(t, await w.admin.post('/admin/pricing/exchange-rates', { currency: 'EUR', rate_to_usd: 0 }), 400, /"rate_to_usd" must be a positive number/);
  assertError(t, await w.admin.post('/admin/pricing/exchange-rates', { currency: 'EURO', rate_to_usd: 1 }), 400, /"currency"/);
  const at = new Date('2020-01-01T00:00:00Z');
  await postRate(w, 'GBP', 1.25, at);
  assertError(t, await w.admin.post('/admin/pricing/exchange-rates', { currency: 'GBP', rate_to_usd: 1.3, effective_at: at }), 409, /already takes effect/);
  const rates = await w.admin.get('/admin/pricing/exchange-rates?currency=GBP');
  t.like(rates.body.data[0], { currency: 'GBP', rate_to_usd: 1.25, effective_at: at.toISOString() });
});

test.serial('receipts price from the card in force when the attempt started, record it, and bill in the org currency at the rate in force', async (t) => {
  await postRate(w, 'EUR', 1.25, new Date(Date.now() - 60_000)); // 1 EUR = 1.25 USD
  t.is((await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { currency: 'EUR' })).statusCode, 200);

  const early = await newJob(w, { hints: { resource_class: 'large' } });
  const { attempt: before } = await claimed(t, w, early.id);
  const card = await postCard(w, {
    effective_at: new Date(),
    models: { 'acme-llm-7': { input: 2, output: 10, cache_read: 0.2, reasoning: 20 } },
    compute: { large: 0.5 },
  });
  const late = await newJob(w, { hints: { resource_class: 'large' } });
  const { attempt: after } = await claimed(t, w, late.id);
  for (const [job, attempt] of [
    [early, before],
    [late, after],
  ] as const) {
    await recordUsage(t, w, job.id, attempt, [{ model: 'acme-llm-7', input_tokens: 1_000_000, output_tokens: 1_000_000, reasoning_tokens: 500_000 }]);
    t.is((await complete(w, job.id, attempt, { status: 'success' })).statusCode, 200);
  }

  const old = await receiptOf(t, w, early.id, before.id);
  t.like(old.cost, { price_table: 'builtin-2025-11', pricing: 'unpriced', unpriced_models: ['acme-llm-7'], base_cost_usd: 0 });
  t.is(old.compute.cost_usd, null, 'the seed card prices no compute');

  const priced = await receiptOf(t, w, late.id, after.id);
  const minutes = priced.compute.billable_ms / 60_000;
  const compute = Math.round(minutes * 0.5 * 1e6) / 1e6;
  // 1M input × $2 + 0.5M output × $10 + 0.5M reasoning × $20 = $17, plus compute
  t.is(priced.llm.models['acme-llm-7'].cost_usd, 17);
  t.like(card.models['acme-llm-7'], { cache_write: 2 }, 'cache writes default to the input price');
  t.is(priced.cost.price_table, card.id);
  t.is(priced.cost.pricing, 'priced');
  t.is(priced.cost.exchange_rate, 1.25);
  t.is(priced.compute.cost_usd, compute);
  t.is(priced.cost.base_cost_usd, Math.round((17 + minutes * 0.5) * 1e6) / 1e6);
  t.deepEqual(priced.cost.billed_cost, { currency: 'EUR', amount: Math.round((priced.cost.base_cost_usd / 1.25) * 1e6) / 1e6 });
  t.is((await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { currency: 'USD' })).statusCode, 200);
});

test.serial('max_cost in a configured currency is enforced; without a rate it fails open', async (t) => {
  await postRate(w, 'CHF', 2, new Date(Date.now() - 60_000)); // 1 CHF = 2 USD
  const MODEL = 'acme-llm-7'; // the card in force since the test above: $2 in, $10 out per million tokens
  const job = await newJob(w, { hints: { max_cost: { currency: 'CHF', amount: 0.01 } } });
  const { attempt } = await claimed(t, w, job.id);
  const res = await postUsage(w, job.id, attempt, [{ model: MODEL, input_tokens: 1000, output_tokens: 1000 }]); // $0.012 = 0.006 CHF
  t.deepEqual(res.body, { recorded: 1 });
  const over = await postUsage(w, job.id, attempt, [{ model: MODEL, input_tokens: 1000, output_tokens: 1000 }]); // 0.012 CHF
  t.deepEqual(over.body, { recorded: 1, budget_exceeded: 'BUDGET_EXCEEDED: cost 0.012 CHF, over hints.max_cost 0.01 CHF' });

  const open = await newJob(w, { hints: { max_cost: { currency: 'JPY', amount: 0.0001 } } });
  const { attempt: a2 } = await claimed(t, w, open.id);
  t.deepEqual(
    (await postUsage(w, open.id, a2, [{ model: MODEL, input_tokens: 1_000_000, output_tokens: 0 }])).body,
    { recorded: 1 },
    'no JPY rate: not enforced',
  );
});
