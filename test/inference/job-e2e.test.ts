// A job whose model is managed/<name> runs its harness against the model through svc's proxy: the CLI
// gets the proxy's URL and its job token (never the provider key), and the calls land on the attempt,
// whose receipt prices them from the rate card in force and bills them in the org's currency.
import test, { type ExecutionContext } from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { managed, target, teardown, world, type World } from './helpers.ts';
import { until } from '../worker/helpers.ts';

const FAKE_CODEX = path.resolve('test/fixtures/bin/fake-codex');
/** USD per million tokens of the upstream model on the card; 1 EUR = 1.25 USD. */
const PRICE = { input: 1000, output: 3000, cache_read: 100, reasoning: 5000 };
const EUR_IN_USD = 1.25;
let w: World;
let cardId: string;
test.before(async () => {
  w = await world({ overrides: { roles: ['api', 'orchestrator', 'worker'], harnesses: { harness_d: { command: FAKE_CODEX } } } });
  const sys = await target(w, { name: 'sys-ai', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'FAKE_KEY' });
  await managed(w, { name: 'fast', target_id: sys.id, upstream_model: 'gpt-fake-1' });
  const ok = (res: { statusCode: number; body: any }, what: string) => {
    if (res.statusCode !== 200 && res.statusCode !== 201) throw new Error(`${what}: ${res.statusCode} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  ok(await w.admin.post('/admin/pricing/exchange-rates', { currency: 'EUR', rate_to_usd: EUR_IN_USD, effective_at: new Date(Date.now() - 60_000) }), 'rate');
  // Compute priced at zero, so the receipt's whole cost is the model's.
  const card = ok(
    await w.admin.post('/admin/pricing/rate-cards', { name: 'e2e card', provenance: 'test prices', models: { 'gpt-fake-1': PRICE }, compute: { default: 0 } }),
    'card',
  );
  cardId = card.id;
  ok(await w.admin.patch(`/orgs/${w.org}/billing`, { currency: 'EUR' }), 'org currency');
});
test.after.always(() => teardown(w));

/** The job once it has ended, done (else the test fails with its attempts), with its first attempt's whole log. */
async function ended(t: ExecutionContext, jobId: string) {
  const job = await until(
    async () => {
      const r = await w.admin.get(`/jobs/${jobId}`);
      return ['done', 'cancelled'].includes(r.body.phase) ? r.body : null;
    },
    'the job to end',
    60_000,
  );
  const attempts = (await w.admin.get(`/projects/${w.project}/jobs/${job.id}/attempts`)).body.data;
  t.is(job.phase, 'done', JSON.stringify(attempts));
  const lines: { seq: number; line: string }[] = [];
  for (let more = true; more;) {
    const page = await w.admin.get(`/jobs/${job.id}/attempts/${attempts[0].id}/logs?limit=50&after_seq=${lines.at(-1)?.seq ?? 0}`);
    lines.push(...page.body.data);
    more = page.body.pagination.has_more;
  }
  return { job, logs: lines.map((l) => l.line).join('\n') };
}

test.serial(
  'a harness_d job on managed/fast calls the model through the proxy with its job token; its receipt bills the usage in EUR from the card',
  async (t) => {
    const created = await w.admin.post(`/projects/${w.project}/jobs`, { description: 'Say hello [[fake:proxy]]', harness: 'harness_d', model: 'managed/fast' });
    t.is(created.statusCode, 201, JSON.stringify(created.body));
    const { job, logs } = await ended(t, created.body.id);
    t.regex(logs, /model managed\/fast: managed\/fast through svc's inference proxy/);
    t.regex(logs, /model said: /);
    t.false(logs.includes(w.fake.apiKey), 'the provider key never reaches the job');

    const upstream = w.fake.calls.filter((c) => c.body?.model === 'gpt-fake-1');
    t.is(upstream.length, 1, 'the proxy called the upstream once, with the upstream model');
    t.is(upstream[0].headers.authorization, `Bearer ${w.fake.apiKey}`, 'with the target credential, which only svc holds');
    const receipt = (await w.admin.get(`/jobs/${job.id}/receipt`)).body;
    // The fake upstream's usage: 21 prompt tokens of which 5 cached, 6 completion tokens of which 2 reasoning.
    const tokens = { input_tokens: 16, output_tokens: 6, cache_read_tokens: 5, cache_write_tokens: 0, reasoning_tokens: 2 };
    t.like(receipt.llm, { calls: 1, ...tokens }, JSON.stringify(receipt));
    t.like(receipt.llm.models['gpt-fake-1'], tokens, 'the call is on the receipt under the upstream model, which the card prices');
    // 16 × 1000 + (6 − 2) × 3000 + 2 × 5000 + 5 × 100 micro-USD = $0.0385, billed at 1.25 USD per EUR.
    t.is(receipt.llm.models['gpt-fake-1'].cost_usd, 0.0385);
    t.like(receipt.compute, { resource_class: 'default', cost_usd: 0 });
    t.like(receipt.cost, { price_table: cardId, pricing: 'priced', base_cost_usd: 0.0385, exchange_rate: EUR_IN_USD });
    t.deepEqual(receipt.cost.billed_cost, { currency: 'EUR', amount: 0.0308 });
  },
);

test.serial(
  'a job whose harness profile names managed/fast resolves it the same way: the proxy, the job token, the receipt in EUR from the card',
  async (t) => {
    const synced = await w.admin.post(`/projects/${w.project}/manifest`, {
      yaml: 'x-svc:\n  agents:\n    version: 1\n    profiles:\n      cheap: [{ harness: harness_d, model: managed/fast }]\n',
    });
    t.is(synced.statusCode, 200, JSON.stringify(synced.body));
    const before = w.fake.calls.filter((c) => c.body?.model === 'gpt-fake-1').length;
    const created = await w.admin.post(`/projects/${w.project}/jobs`, { description: 'Say hello [[fake:proxy]]', harness_profile: 'cheap' });
    t.is(created.statusCode, 201, JSON.stringify(created.body));
    const { job, logs } = await ended(t, created.body.id);
    t.regex(logs, /model managed\/fast: managed\/fast through svc's inference proxy/);
    t.false(logs.includes(w.fake.apiKey), 'the provider key never reaches the job');
    const upstream = w.fake.calls.filter((c) => c.body?.model === 'gpt-fake-1').slice(before);
    t.is(upstream.length, 1, 'one upstream call, with the upstream model');
    const receipt = (await w.admin.get(`/jobs/${job.id}/receipt`)).body;
    t.like(receipt.llm, { calls: 1 }, JSON.stringify(receipt));
    t.like(receipt.cost, { price_table: cardId, pricing: 'priced', base_cost_usd: 0.0385, exchange_rate: EUR_IN_USD });
    t.deepEqual(receipt.cost.billed_cost, { currency: 'EUR', amount: 0.0308 });
  },
);

/** Live processes started for the job (their environment names it). */
function processesOf(jobId: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`SVC_JOB_ID=${jobId}`)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z') pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

async function logsOf(jobId: string, attemptId: string): Promise<string> {
  const lines: { seq: number; line: string }[] = [];
  for (let more = true; more;) {
    const page = await w.admin.get(`/jobs/${jobId}/attempts/${attemptId}/logs?limit=50&after_seq=${lines.at(-1)?.seq ?? 0}`);
    lines.push(...page.body.data);
    more = page.body.pagination.has_more;
  }
  return lines.map((l) => l.line).join('\n');
}

test.serial(
  'a managed job whose usage reaches hints.max_tokens: its next call is refused, the attempt ends BUDGET_EXCEEDED, and the CLI gets time to say so before it is stopped',
  async (t) => {
    const before = w.fake.calls.length;
    // One call: 16 input, 5 cached, 6 output = 27 tokens, exactly the budget; the second is refused.
    const created = await w.admin.post(`/projects/${w.project}/jobs`, {
      description: 'Spend [[fake:proxy-budget]]',
      harness: 'harness_d',
      model: 'managed/fast',
      hints: { max_tokens: 27, max_attempts: 1 },
    });
    t.is(created.statusCode, 201, JSON.stringify(created.body));
    const id = created.body.id;
    const job = await until(
      async () => {
        const r = await w.admin.get(`/jobs/${id}`);
        return ['done', 'cancelled'].includes(r.body.phase) ? r.body : null;
      },
      'the job to end',
      60_000,
    );
    t.is(job.phase, 'cancelled');
    const [attempt] = (await w.admin.get(`/projects/${w.project}/jobs/${id}/attempts`)).body.data;
    t.like(attempt, { status: 'failed', error: 'BUDGET_EXCEEDED: 27 tokens used, at hints.max_tokens 27' });
    t.is(attempt.result_json.error_code, 'BUDGET_EXCEEDED');
    const logs = await until(
      async () => {
        const text = await logsOf(id, attempt.id);
        return /^stopped: /m.test(text) ? text : null;
      },
      'the attempt run to stop',
      20_000,
    );
    // The CLI said why a second after the refusal (the attempt had ended by then): it was not killed at once.
    const refusal = logs.search(/^unexpected status 403: .*model call refused: BUDGET_EXCEEDED: 27 tokens used, at hints\.max_tokens 27/m);
    t.true(refusal >= 0, logs);
    t.true(refusal < logs.indexOf('stopped: '), logs);
    t.is(w.fake.calls.slice(before).length, 1, 'the refused call never went upstream');
    await until(async () => processesOf(id).length === 0, 'the CLI to be gone', 10_000);
    t.pass();
  },
);

test.serial('a managed job cancelled by a user: its CLI is stopped at once (no grace: that is for a CLI the gateway cut off)', async (t) => {
  const created = await w.admin.post(`/projects/${w.project}/jobs`, { description: 'Wait [[fake:hang]]', harness: 'harness_d', model: 'managed/fast' });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const id = created.body.id;
  await until(async () => processesOf(id).length > 0, 'the CLI to run', 30_000);
  const cancelled = await w.admin.patch(`/jobs/${id}`, { phase: 'cancelled', close_reason: 'not needed' });
  t.is(cancelled.statusCode, 200, JSON.stringify(cancelled.body));
  const started = Date.now();
  await until(async () => processesOf(id).length === 0, 'the CLI to be gone', 10_000);
  t.true(Date.now() - started < 4000, `gone after ${Date.now() - started} ms`);
});
