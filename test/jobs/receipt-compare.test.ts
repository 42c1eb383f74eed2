import test from 'ava';
import { assertError } from '../orgs/helpers.ts';
import { attemptRow, claimWorld, claimed, complete, newJob, type World } from './claim-helpers.ts';
import { receiptOf, recordUsage } from './receipt-helpers.ts';

let w: World;
let jobId: string;
const ids: string[] = [];
const billable: number[] = [];

/** A job with three attempts: 1 failed, 2 succeeded (each with usage and git), 3 still running with usage so far. */
test.before(async (t) => {
  w = await claimWorld('compare');
  const job = await newJob(w, { hints: { max_attempts: 3 } });
  jobId = job.id;
  const runs: [unknown[], Record<string, unknown>, Record<string, unknown>][] = [
    [
      [{ model: 'claude-sonnet-4-5', input_tokens: 1000, output_tokens: 100 }],
      { resolved_branch: 'svc/fix', pushed: false },
      { status: 'failed', reason: 'tests fail' },
    ],
    [
      [{ model: 'gpt-5', input_tokens: 2000, output_tokens: 1000, reasoning_tokens: 600, cache_read_tokens: 400 }],
      { resolved_branch: 'svc/fix', pushed: true, commits: ['abc123'] },
      { status: 'success', summary: 'fixed' },
    ],
  ];
  for (const [calls, git, result] of runs) {
    const { attempt } = await claimed(t, w, job.id);
    await recordUsage(t, w, job.id, attempt, calls);
    await w
      .db('job_attempts')
      .where({ id: attempt.id })
      .update({ git: JSON.stringify(git) }); // the worker's part, later
    await complete(w, job.id, attempt, result);
    const row = await attemptRow(w, attempt.id);
    ids.push(attempt.id);
    billable.push(row.ended_at.getTime() - row.started_at.getTime());
  }
  // review_required none: attempt 2 made the job done; reopen it for a running attempt 3.
  await w.db('jobs').where({ id: job.id }).update({ phase: 'ready', closed_at: null });
  const third = await claimed(t, w, job.id);
  await recordUsage(t, w, job.id, third.attempt, [
    { model: 'gpt-5', input_tokens: 100, output_tokens: 10 },
    { model: 'acme-llm-7', input_tokens: 50, output_tokens: 5 },
  ]);
  ids.push(third.attempt.id);
});
test.after.always(async () => {
  await w?.ctx.srv.stop();
});

const compare = (query: string, user = w.owner) => user.api.get(`/jobs/${jobId}/compare?${query}`);
const TOKENS_1 = { input_tokens: 1000, output_tokens: 100, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0, total_tokens: 1100, calls: 1 };
const TOKENS_2 = {
  input_tokens: 2000,
  output_tokens: 1000,
  cache_read_tokens: 400,
  cache_write_tokens: 0,
  reasoning_tokens: 600,
  total_tokens: 3400,
  calls: 1,
};
const SUMMARY_FIELDS = ['attempt_number', 'ended_at', 'error', 'id', 'pricing', 'result_status', 'started_at', 'status'];

test('compare 1 with 2: every difference with a, b and changed; numbers with delta; no receipts unless asked', async (t) => {
  const res = await compare('a=1&b=2');
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body).sort(), ['a', 'b', 'differences', 'job_id']);
  t.is(res.body.job_id, jobId);
  t.deepEqual(Object.keys(res.body.a).sort(), SUMMARY_FIELDS);
  t.like(res.body.a, { id: ids[0], attempt_number: 1, status: 'failed', result_status: 'failed', error: 'tests fail', pricing: 'priced' });
  t.like(res.body.b, { id: ids[1], attempt_number: 2, status: 'succeeded', result_status: 'success', error: null, pricing: 'priced' });
  const d = res.body.differences;
  t.deepEqual(Object.keys(d).sort(), ['cost_usd', 'duration_ms', 'git', 'result_json', 'result_status', 'result_summary', 'status', 'tokens']);
  t.deepEqual(d.status, { a: 'failed', b: 'succeeded', changed: true });
  t.deepEqual(d.result_status, { a: 'failed', b: 'success', changed: true });
  t.deepEqual(d.result_summary, { a: null, b: 'fixed', changed: true });
  t.deepEqual(d.result_json, { a: { svc: { status: 'failed', reason: 'tests fail' } }, b: { svc: { status: 'success', summary: 'fixed' } }, changed: true });
  t.deepEqual(d.git, { a: { resolved_branch: 'svc/fix', pushed: false }, b: { resolved_branch: 'svc/fix', pushed: true, commits: ['abc123'] }, changed: true });
  t.deepEqual(d.duration_ms, { a: billable[0], b: billable[1], changed: billable[0] !== billable[1], delta: billable[1] - billable[0] });
  t.deepEqual(d.tokens, {
    a: TOKENS_1,
    b: TOKENS_2,
    changed: true,
    delta: { input_tokens: 1000, output_tokens: 900, cache_read_tokens: 400, cache_write_tokens: 0, reasoning_tokens: 600, total_tokens: 2300, calls: 0 },
  });
  // sonnet 1000 × $3 + 100 × $15 per million = $0.0045; gpt-5 2000 × $1.25 + 1000 × $10 + 400 × $0.125 = $0.01255
  t.deepEqual(d.cost_usd, { a: 0.0045, b: 0.01255, changed: true, delta: 0.00805 });
});

test('include_receipt=true adds each attempt receipt, exactly as GET …/receipt returns it', async (t) => {
  const res = await compare('a=2&b=1&include_receipt=true');
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body.a).sort(), [...SUMMARY_FIELDS, 'receipt'].sort());
  t.deepEqual(res.body.a.receipt, await receiptOf(t, w, jobId, ids[1]));
  t.deepEqual(res.body.b.receipt, await receiptOf(t, w, jobId, ids[0]));
  t.deepEqual(res.body.differences.status, { a: 'succeeded', b: 'failed', changed: true });
  t.is(res.body.differences.cost_usd.delta, -0.00805);
  t.false('receipt' in (await compare('a=2&b=1&include_receipt=false')).body.a);
});

test('an attempt with itself: nothing changed, every delta 0', async (t) => {
  const res = await compare('a=2&b=2');
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.deepEqual(res.body.a, res.body.b);
  for (const [key, diff] of Object.entries<any>(res.body.differences)) t.false(diff.changed, key);
  t.is(res.body.differences.duration_ms.delta, 0);
  t.is(res.body.differences.cost_usd.delta, 0);
  t.true(Object.values(res.body.differences.tokens.delta).every((v) => v === 0));
});

test('a running attempt: usage so far (priced fail-open), no duration, receipt null', async (t) => {
  const res = await compare('a=2&b=3&include_receipt=true');
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.like(res.body.b, { id: ids[2], attempt_number: 3, status: 'running', result_status: null, ended_at: null, pricing: 'partial', receipt: null });
  const d = res.body.differences;
  t.deepEqual(d.duration_ms, { a: billable[1], b: null, changed: true, delta: null });
  t.like(d.tokens.b, { input_tokens: 150, output_tokens: 15, total_tokens: 165, calls: 2 });
  // gpt-5 100 × $1.25 + 10 × $10 per million; acme-llm-7 has no price and counts 0
  t.like(d.cost_usd, { a: 0.01255, b: 0.000225, changed: true, delta: -0.012325 });
  t.deepEqual(d.git, { a: { resolved_branch: 'svc/fix', pushed: true, commits: ['abc123'] }, b: null, changed: true });
});

test('an attempt number the job does not have is 404 naming it; bad numbers 400; other orgs and unknown jobs 404', async (t) => {
  assertError(t, await compare('a=1&b=9'), 404, `attempt 9 (b) of job ${jobId} not found`);
  assertError(t, await compare('a=7&b=1'), 404, `attempt 7 (a) of job ${jobId} not found`);
  assertError(t, await compare('a=0&b=1'), 400, '"a" must be greater than or equal to 1');
  assertError(t, await compare('a=1'), 400, '"b" is required');
  assertError(t, await compare('a=1&b=x'), 400, '"b" must be a number');
  assertError(t, await compare('a=1&b=2', w.outsider), 404, `job ${jobId} not found`);
  assertError(t, await w.owner.api.get('/jobs/nojob-00000000/compare?a=1&b=1'), 404, 'job nojob-00000000 not found');
});
