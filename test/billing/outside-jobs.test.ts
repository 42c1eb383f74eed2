import test from 'ava';
import { call, chat, jobToken, managed, target, teardown, world, type World } from '../inference/helpers.ts';

/** Gateway calls made with a user's or a service account's token (no job) show in the org's spend and the admin's usage report. */
let w: World;
let bot: { id: string; token: string };
let job: Awaited<ReturnType<typeof jobToken>>;
const hello = [{ role: 'user', content: 'Say hello' }];
// gpt-fake-1 answers 16 input, 5 cache-read, 6 output (2 of them reasoning) tokens: 16×1000 + 5×100 + 6×2000 micro-USD.
const GPT_CALL_USD = 0.0285;

test.before(async () => {
  w = await world();
  const sys = await target(w, { name: 'sys-ai', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'FAKE_KEY' });
  const shared = await call(w.ctx.srv.server, 'PUT', '/system/secrets/FAKE_KEY', { shared_with_jobs: true }, w.ctx.adminToken);
  if (shared.statusCode !== 200) throw new Error(`share: ${JSON.stringify(shared.body)}`);
  const claude = await target(w, { org_id: w.org, name: 'claude', kind: 'anthropic', base_url: w.fake.url, credential_secret: 'FAKE_KEY' });
  await managed(w, { name: 'fast', target_id: sys.id, upstream_model: 'gpt-fake-1' });
  await managed(w, { org_id: w.org, name: 'smart', target_id: claude.id, upstream_model: 'claude-fake-1' });
  const card = await w.admin.post('/admin/pricing/rate-cards', {
    name: 'gateway test card',
    provenance: 'test prices',
    models: { 'gpt-fake-1': { input: 1000, output: 2000, cache_read: 100 } },
    compute: {},
  });
  if (card.statusCode !== 201) throw new Error(`card: ${JSON.stringify(card.body)}`);
  const sa = await w.orgAdmin.api.post(`/orgs/${w.org}/service-accounts`, { name: 'gw-bot', role: 'member' });
  const minted = await w.orgAdmin.api.post(`/orgs/${w.org}/service-accounts/${sa.body.id}/tokens`, { permissions: ['inference:use'] });
  if (minted.statusCode !== 201) throw new Error(`token: ${JSON.stringify(minted.body)}`);
  bot = { id: sa.body.id, token: minted.body.token };
});
test.after.always(async () => {
  await teardown(w);
});

const ORG = () => ({ 'x-svc-org': w.org });

test.serial(
  'calls outside jobs are priced by caller, model and day in /spend, listed in the admin usage; the calls of a job stay on its receipt',
  async (t) => {
    const before = (await w.orgAdmin.api.get(`/orgs/${w.org}/spend`)).body;
    t.like(before.outside_jobs, { totals: { calls: 0, base_cost_usd: 0 }, by_caller: [], by_model: [], by_day: [] });

    for (let i = 0; i < 2; i++) t.is((await chat(w, w.member.token, { model: 'managed/fast', messages: hello }, ORG())).statusCode, 200);
    const byBot = await chat(w, bot.token, { model: 'managed/smart', messages: hello }, ORG());
    t.is(byBot.statusCode, 200, byBot.raw);
    // Not counted here: a job's call (its receipt counts it).
    job = await jobToken(w);
    t.is((await chat(w, job.token, { model: 'managed/fast', messages: hello })).statusCode, 200);
    t.is(
      await w.ctx.srv.kernel
        .db('inference_usage')
        .count('* as n')
        .first()
        .then((r: any) => Number(r.n)),
      4,
    );

    const spend = (await w.orgAdmin.api.get(`/orgs/${w.org}/spend?window=1d`)).body;
    const today = new Date().toISOString().slice(0, 10);
    t.deepEqual(spend.outside_jobs.totals, {
      calls: 3,
      base_cost_usd: 2 * GPT_CALL_USD,
      billed_cost: 2 * GPT_CALL_USD,
      unconverted_usd: 0,
      unpriced_calls: 1,
      input_tokens: 16 * 2 + 13,
      output_tokens: 6 * 2 + 6,
      cache_read_tokens: 5 * 2 + 4,
      cache_write_tokens: 3,
      reasoning_tokens: 4,
    });
    t.deepEqual(spend.outside_jobs.by_caller.map((c: any) => [c.principal_kind, c.principal_id, c.calls, c.base_cost_usd, c.unpriced_calls]).sort(), [
      ['service_account', bot.id, 1, 0, 1],
      ['user', w.member.id, 2, 2 * GPT_CALL_USD, 0],
    ]);
    t.deepEqual(spend.outside_jobs.by_model.map((m: any) => [m.model, m.calls, m.base_cost_usd]).sort(), [
      ['claude-fake-1', 1, 0],
      ['gpt-fake-1', 2, 2 * GPT_CALL_USD],
    ]);
    t.deepEqual(
      spend.outside_jobs.by_day.map((d: any) => [d.day, d.calls]),
      [[today, 3]],
    );
    t.is(spend.totals.attempts, 0, 'the receipts part is unchanged: the job has not ended');

    const usage = await w.admin.get(`/admin/orgs/${w.org}/usage?window=1d&limit=2`);
    t.is(usage.statusCode, 200, JSON.stringify(usage.body));
    t.like(usage.body.outside_jobs.totals, { calls: 3, base_cost_usd: 2 * GPT_CALL_USD, unpriced_calls: 1 });
    t.is(usage.body.outside_jobs.records.length, 2, 'limit');
    t.like(usage.body.outside_jobs.records[0], {
      principal_kind: 'service_account',
      principal_id: bot.id,
      project_id: null,
      model: 'managed/smart',
      upstream_model: 'claude-fake-1',
      provider: 'anthropic',
      status: 200,
      input_tokens: 13,
      output_tokens: 6,
      cache_read_tokens: 4,
      cache_write_tokens: 3,
    });
    t.like(usage.body.outside_jobs.records[1], { principal_kind: 'user', principal_id: w.member.id, model: 'managed/fast', upstream_model: 'gpt-fake-1' });
    t.deepEqual(
      usage.body.records.map((r: any) => [r.job_id, r.attempt_id, r.model]),
      [[job.jobId, job.attemptId, 'gpt-fake-1']],
      "the job's call is on its attempt, not among the calls outside jobs",
    );
  },
);

test.serial("billed in the org's currency at the rate in force when the calls were made; without one, USD stays unconverted", async (t) => {
  t.is((await w.admin.post('/admin/pricing/exchange-rates', { currency: 'SEK', rate_to_usd: 0.2 })).statusCode, 201);
  const changed = await w.orgAdmin.api.patch(`/orgs/${w.org}/billing`, { currency: 'SEK' });
  t.is(changed.statusCode, 200, JSON.stringify(changed.body));
  const unconverted = (await w.orgAdmin.api.get(`/orgs/${w.org}/spend`)).body;
  t.is(unconverted.currency, 'SEK');
  t.like(unconverted.outside_jobs.totals, { base_cost_usd: 0.057, billed_cost: 0, unconverted_usd: 0.057 }, 'the rate came after the calls');

  const anHourAgo = new Date(Date.now() - 3_600_000).toISOString();
  t.is((await w.admin.post('/admin/pricing/exchange-rates', { currency: 'SEK', rate_to_usd: 0.1, effective_at: anHourAgo })).statusCode, 201);
  const spend = (await w.orgAdmin.api.get(`/orgs/${w.org}/spend`)).body;
  t.like(spend.outside_jobs.totals, { base_cost_usd: 0.057, billed_cost: 0.57, unconverted_usd: 0 });
  t.like(
    spend.outside_jobs.by_caller.find((c: any) => c.principal_kind === 'user'),
    { billed_cost: 0.57 },
  );
});
