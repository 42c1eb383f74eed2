import test from 'ava';
import { attemptRow, claimWorld, claimed, complete, jobRow, newJob, type World } from './claim-helpers.ts';
import { postUsage } from './receipt-helpers.ts';

let w: World;
test.before(async () => {
  w = await claimWorld('budget');
});
test.after.always(() => w?.ctx.srv.stop());

const SONNET = 'claude-sonnet-4-5-20250929'; // $3 in, $15 out per million tokens
const call = (model: string, input: number, output: number) => ({ model, input_tokens: input, output_tokens: output });

test('usage over hints.max_tokens ends the attempt: failed with BUDGET_EXCEEDED, the job cancelled, system.job.failed says so', async (t) => {
  const job = await newJob(w, { hints: { max_tokens: 1000 } });
  const { attempt } = await claimed(t, w, job.id);
  const under = await postUsage(w, job.id, attempt, [call(SONNET, 600, 300)]);
  t.deepEqual(under.body, { recorded: 1 }, '900 tokens: within the budget');
  const over = await postUsage(w, job.id, attempt, [call(SONNET, 100, 50)]);
  t.is(over.statusCode, 201);
  t.deepEqual(over.body, { recorded: 1, budget_exceeded: 'BUDGET_EXCEEDED: 1050 tokens used, over hints.max_tokens 1000' });
  const ended = await attemptRow(w, attempt.id);
  t.like(ended, { status: 'failed', result_status: 'failed', error: over.body.budget_exceeded });
  t.deepEqual(ended.result_json, { svc: { status: 'failed', reason: over.body.budget_exceeded }, error_code: 'BUDGET_EXCEEDED' });
  t.is((await jobRow(w, job.id)).phase, 'cancelled');
  const [event] = await w.db('events').where({ type: 'system.job.failed' }).whereRaw("payload_json->>'job_id' = ?", [job.id]);
  t.is(event.payload_json.error_code, 'BUDGET_EXCEEDED');
  const late = await postUsage(w, job.id, attempt, [call(SONNET, 1, 1)]);
  t.is(late.statusCode, 409, 'the attempt has ended: its runner hears lease lost');
  t.is((await complete(w, job.id, attempt, { status: 'success' })).statusCode, 409);
});

test('usage over hints.max_cost (USD) ends the attempt; max_attempts still allows a retry', async (t) => {
  const job = await newJob(w, { hints: { max_cost: { currency: 'USD', amount: 0.01 }, max_attempts: 2 } });
  const { attempt } = await claimed(t, w, job.id);
  const over = await postUsage(w, job.id, attempt, [call(SONNET, 1000, 1000)]); // $0.003 + $0.015
  t.deepEqual(over.body, { recorded: 1, budget_exceeded: 'BUDGET_EXCEEDED: cost 0.018 USD, over hints.max_cost 0.01 USD' });
  t.is((await jobRow(w, job.id)).phase, 'ready', 'the second attempt may run');
});

test('fail-open: unpriced models count nothing towards max_cost, and a max_cost in a currency without an exchange rate is not enforced; no budget, nothing checked', async (t) => {
  const cases = [
    { hints: { max_cost: { currency: 'USD', amount: 0.0001 } }, model: 'in-house-model-7' },
    { hints: { max_cost: { currency: 'EUR', amount: 0.0001 } }, model: SONNET },
    { hints: {}, model: SONNET },
  ];
  for (const { hints, model } of cases) {
    const job = await newJob(w, { hints });
    const { attempt } = await claimed(t, w, job.id);
    const res = await postUsage(w, job.id, attempt, [call(model, 1_000_000, 1_000_000)]);
    t.deepEqual(res.body, { recorded: 1 }, JSON.stringify(hints));
    t.is((await attemptRow(w, attempt.id)).status, 'running');
    t.is((await complete(w, job.id, attempt, { status: 'success' })).statusCode, 200);
  }
});

test('each recorded call is an llm.call event with its usage only', async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  await postUsage(w, job.id, attempt, [{ ...call(SONNET, 10, 20), provider: 'anthropic', duration_ms: 900 }, call('gpt-4o-mini', 1, 2)]);
  const events = await w.db('events').where({ type: 'llm.call' }).whereRaw("payload_json->>'attempt_id' = ?", [attempt.id]).orderBy('created_at');
  t.true(events.every((e: any) => e.source === 'runner' && e.project_id === job.project_id));
  t.deepEqual(
    events.map((e: any) => e.payload_json).sort((a: any, b: any) => a.model.localeCompare(b.model)),
    [
      { job_id: job.id, attempt_id: attempt.id, model: SONNET, provider: 'anthropic', input_tokens: 10, output_tokens: 20, duration_ms: 900 },
      { job_id: job.id, attempt_id: attempt.id, model: 'gpt-4o-mini', input_tokens: 1, output_tokens: 2 },
    ].sort((a, b) => a.model.localeCompare(b.model)),
  );
});
