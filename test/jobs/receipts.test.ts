import test from 'ava';
import { randomUUID } from 'node:crypto';
import { assertError } from '../orgs/helpers.ts';
import { ISO, assertConflict, attemptRow, attemptsOf, claimWorld, claimed, complete, newJob, type World } from './claim-helpers.ts';
import { RECEIPT_FIELDS, ZERO_LLM, phaseRows, postPhases, postUsage, receiptOf, receiptRows, recordUsage, usageRows } from './receipt-helpers.ts';

let w: World;
test.before(async () => {
  w = await claimWorld('receipts');
});
test.after.always(async () => {
  await w?.ctx.srv.stop();
});

const SONNET = 'claude-sonnet-4-5-20250929';
const MINI = 'gpt-4o-mini-2024-07-18';
const CALLS = [
  {
    model: SONNET,
    provider: 'anthropic',
    input_tokens: 600_000,
    output_tokens: 150_000,
    cache_read_tokens: 500_000,
    cache_write_tokens: 100_000,
    reasoning_tokens: 40_000,
    duration_ms: 12_000,
  },
  { model: SONNET, provider: 'anthropic', input_tokens: 400_000, output_tokens: 50_000, duration_ms: 8000 },
  { model: MINI, provider: 'openai', input_tokens: 2_000_000, output_tokens: 1_000_000, cache_read_tokens: 1_000_000 },
];
const at = (s: number) => new Date(Date.UTC(2025, 0, 2, 10, 0, 0) + s * 1000).toISOString();
const PHASES = [
  { name: 'provision', started_at: at(0), ended_at: at(1.5) },
  { name: 'clone', started_at: at(1.5), ended_at: at(4) },
  { name: 'execute', started_at: at(4), ended_at: at(64) },
];

test('usage and phases, then complete: a receipt with exact sums, the per-model breakdown, billable_ms and the priced cost', async (t) => {
  const job = await newJob(w, { hints: { resource_class: 'large' } });
  const { attempt } = await claimed(t, w, job.id);
  await recordUsage(t, w, job.id, attempt, CALLS.slice(0, 2));
  await recordUsage(t, w, job.id, attempt, CALLS.slice(2));
  const res = await postPhases(w, job.id, attempt, PHASES);
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.deepEqual(res.body, { recorded: 3 });
  t.is((await complete(w, job.id, attempt, { status: 'success', summary: 'done' })).statusCode, 200);

  const row = await attemptRow(w, attempt.id);
  const billable = row.ended_at.getTime() - row.started_at.getTime();
  const receipt = await receiptOf(t, w, job.id, attempt.id);
  t.deepEqual(Object.keys(receipt).sort(), RECEIPT_FIELDS);
  t.regex(receipt.created_at, ISO);
  t.like(receipt, {
    receipt_version: 1,
    attempt_id: attempt.id,
    attempt_number: 1,
    job_id: job.id,
    status: 'succeeded',
    result_status: 'success',
    workspace: null,
  });
  t.deepEqual(receipt.timing, {
    started_at: row.started_at.toISOString(),
    ended_at: row.ended_at.toISOString(),
    billable_ms: billable,
    phases: { provision: 1500, clone: 2500, execute: 60_000 },
  });
  t.deepEqual(receipt.compute, { resource_class: 'large', billable_ms: billable, cost_usd: null });
  // Keys in the documented order, phases in lifecycle order (jsonb alone would not keep them).
  t.deepEqual(Object.keys(receipt), [
    'receipt_version',
    'attempt_id',
    'attempt_number',
    'job_id',
    'status',
    'result_status',
    'timing',
    'llm',
    'cost',
    'compute',
    'workspace',
    'created_at',
  ]);
  t.deepEqual(Object.keys(receipt.timing.phases), ['provision', 'clone', 'execute']);
  t.deepEqual(receipt.llm, {
    calls: 3,
    input_tokens: 3_000_000,
    output_tokens: 1_200_000,
    cache_read_tokens: 1_500_000,
    cache_write_tokens: 100_000,
    reasoning_tokens: 40_000,
    duration_ms: 20_000,
    models: {
      [SONNET]: {
        calls: 2,
        input_tokens: 1_000_000,
        output_tokens: 200_000,
        cache_read_tokens: 500_000,
        cache_write_tokens: 100_000,
        reasoning_tokens: 40_000,
        duration_ms: 20_000,
        providers: ['anthropic'],
        cost_usd: 6.525,
        reported_cost_usd: null,
        priced_as: 'claude-sonnet-4',
      },
      [MINI]: {
        calls: 1,
        input_tokens: 2_000_000,
        output_tokens: 1_000_000,
        cache_read_tokens: 1_000_000,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        duration_ms: 0,
        providers: ['openai'],
        cost_usd: 0.975,
        reported_cost_usd: null,
        priced_as: 'gpt-4o-mini',
      },
    },
  });
  // sonnet: 1M in × $3 + 0.2M out × $15 + 0.5M cache reads × $0.30 + 0.1M cache writes × $3.75; mini: 2M × $0.15 + 1M × $0.60 + 1M × $0.075
  t.deepEqual(receipt.cost, {
    base_cost_usd: 7.5,
    billed_cost: { currency: 'USD', amount: 7.5 },
    pricing: 'priced',
    unpriced_models: [],
    reported_cost_usd: null,
    price_table: 'builtin-2025-11',
    exchange_rate: 1,
  });
  t.is(receipt.cost.billed_cost.amount.toFixed(2), '7.50');
  t.deepEqual((await w.owner.api.get(`/jobs/${job.id}/receipt`)).body, receipt);
  t.is((await receiptRows(w, job.id)).length, 1);
});

test("pricing: a model without a price counts 0 and makes it 'partial'; only unpriced models: 'unpriced'; no usage: 'priced', all zero", async (t) => {
  const run = async (calls: unknown[]) => {
    const job = await newJob(w);
    const { attempt } = await claimed(t, w, job.id);
    if (calls.length) await recordUsage(t, w, job.id, attempt, calls);
    await complete(w, job.id, attempt, { status: 'success' });
    return receiptOf(t, w, job.id, attempt.id);
  };
  const mystery = { model: 'acme-llm-7', input_tokens: 5000, output_tokens: 100 };
  const partial = await run([{ model: 'gpt-4o', input_tokens: 1_000_000, output_tokens: 100_000 }, mystery]);
  t.deepEqual(partial.cost, {
    base_cost_usd: 3.5,
    billed_cost: { currency: 'USD', amount: 3.5 },
    pricing: 'partial',
    unpriced_models: ['acme-llm-7'],
    reported_cost_usd: null,
    price_table: 'builtin-2025-11',
    exchange_rate: 1,
  });
  t.like(partial.llm.models['acme-llm-7'], { cost_usd: null, reported_cost_usd: null, priced_as: null, input_tokens: 5000, providers: [] });
  t.like(partial.llm, { calls: 2, input_tokens: 1_005_000, output_tokens: 100_100 });

  const unpriced = await run([mystery, { ...mystery, model: 'other/thing' }]);
  t.like(unpriced.cost, { base_cost_usd: 0, pricing: 'unpriced', unpriced_models: ['acme-llm-7', 'other/thing'] });

  const idle = await run([]);
  t.deepEqual(idle.llm, ZERO_LLM);
  t.like(idle.cost, { base_cost_usd: 0, pricing: 'priced', unpriced_models: [] });
  t.deepEqual(idle.compute, { resource_class: 'default', billable_ms: idle.timing.billable_ms, cost_usd: null });
  t.deepEqual(idle.timing.phases, {});
});

test("a runner's reported_cost_usd: stored with the usage, summed per model and in total, shown for an unpriced model, never priced", async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  const priced = { model: 'gpt-4o', input_tokens: 1_000_000, output_tokens: 100_000 };
  const mystery = { model: 'acme-llm-7', input_tokens: 5000, output_tokens: 100 };
  await recordUsage(t, w, job.id, attempt, [
    { ...priced, reported_cost_usd: 42 },
    { ...mystery, reported_cost_usd: 0.25 },
    { ...mystery, reported_cost_usd: 0.0123 },
    mystery,
  ]);
  t.deepEqual(
    (await usageRows(w, attempt.id)).map((r: { reported_cost_usd: number | null }) => r.reported_cost_usd),
    [42, 0.25, 0.0123, null],
  );
  await complete(w, job.id, attempt, { status: 'success' });
  const receipt = await receiptOf(t, w, job.id, attempt.id);
  t.like(receipt.llm.models['acme-llm-7'], { calls: 3, cost_usd: null, reported_cost_usd: 0.2623, priced_as: 'reported by the CLI' });
  // gpt-4o is priced from the table (1M in × $2.50 + 0.1M out × $10), not from the figure the runner sent.
  t.like(receipt.llm.models['gpt-4o'], { cost_usd: 3.5, reported_cost_usd: 42, priced_as: 'gpt-4o' });
  t.deepEqual(receipt.cost, {
    base_cost_usd: 3.5,
    billed_cost: { currency: 'USD', amount: 3.5 },
    pricing: 'partial',
    unpriced_models: ['acme-llm-7'],
    reported_cost_usd: 42.2623,
    price_table: 'builtin-2025-11',
    exchange_rate: 1,
  });
});

test('every way an attempt ends writes its receipt: release, failed, submit, reaping, cancel', async (t) => {
  const call = { model: 'claude-opus-4-1', input_tokens: 1000, output_tokens: 10 };
  const ends: [string, string, string | null][] = [];
  const check = async (jobId: string, attempt: { id: string }, status: string, resultStatus: string | null) => {
    const receipt = await receiptOf(t, w, jobId, attempt.id);
    t.like(receipt, { status, result_status: resultStatus, llm: { calls: 1, input_tokens: 1000 }, cost: { base_cost_usd: 0.01575, pricing: 'priced' } });
    ends.push([jobId, status, resultStatus]);
  };

  const released = await newJob(w);
  const r = await claimed(t, w, released.id);
  await recordUsage(t, w, released.id, r.attempt, [call]);
  t.is((await w.owner.api.post(`/jobs/${released.id}/release`, { attempt_id: r.attempt.id, lease_token: r.attempt.lease_token })).statusCode, 200);
  await check(released.id, r.attempt, 'cancelled', null);

  const failed = await newJob(w, { hints: { max_attempts: 2 } });
  const f = await claimed(t, w, failed.id);
  await recordUsage(t, w, failed.id, f.attempt, [call]);
  await complete(w, failed.id, f.attempt, { status: 'failed', reason: 'tests fail' });
  await check(failed.id, f.attempt, 'failed', 'failed');

  const reviewed = await newJob(w, { review_required: 'human' });
  const s = await claimed(t, w, reviewed.id);
  await recordUsage(t, w, reviewed.id, s.attempt, [call]);
  t.is((await w.owner.api.post(`/jobs/${reviewed.id}/submit`, { summary: 'please look' })).statusCode, 200);
  await check(reviewed.id, s.attempt, 'succeeded', 'success');
  const rejected = await w.owner.api.post(`/jobs/${reviewed.id}/reject`, { reason: 'not yet' });
  t.is(rejected.statusCode, 200);
  t.is((await receiptRows(w, reviewed.id)).length, 1, 'the new attempt has no receipt until it ends');

  const reaped = await newJob(w);
  const e = await claimed(t, w, reaped.id);
  await recordUsage(t, w, reaped.id, e.attempt, [call]);
  await w
    .db('job_attempts')
    .where({ id: e.attempt.id })
    .update({ lease_expires_at: w.db.raw("now() - interval '1 second'") });
  t.true((await w.claims.reapExpired()).some((x) => x.attempt_id === e.attempt.id));
  // Reaped: lost with its worker, so cancelled (and retried), still with its receipt.
  await check(reaped.id, e.attempt, 'cancelled', null);

  const cancelled = await newJob(w);
  const c = await claimed(t, w, cancelled.id);
  await recordUsage(t, w, cancelled.id, c.attempt, [call]);
  t.is((await w.owner.api.patch(`/jobs/${cancelled.id}`, { phase: 'cancelled' })).statusCode, 200);
  await check(cancelled.id, c.attempt, 'cancelled', null);

  t.is(ends.length, 5);
  // Across the file's database: every ended attempt has exactly one receipt, and no running attempt has one.
  const { rows } = await w.db.raw(`SELECT a.id, a.status, r.attempt_id AS receipt FROM job_attempts a LEFT JOIN attempt_receipts r ON r.attempt_id = a.id
    WHERE (a.ended_at IS NULL) <> (r.attempt_id IS NULL)`);
  t.deepEqual(rows, []);
});

test('receipts are immutable: UPDATE and DELETE are refused by the database; they go only with their job', async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  await recordUsage(t, w, job.id, attempt, [{ model: 'gpt-5', input_tokens: 10, output_tokens: 10 }]);
  await complete(w, job.id, attempt, { status: 'success' });
  const before = await receiptRows(w, job.id);
  const update = await t.throwsAsync(
    w
      .db('attempt_receipts')
      .where({ attempt_id: attempt.id })
      .update({ receipt: JSON.stringify({ forged: true }) }),
  );
  t.regex(update!.message, /attempt receipts are immutable: UPDATE of the receipt of attempt [0-9a-f-]{36} is not allowed/);
  const remove = await t.throwsAsync(w.db('attempt_receipts').where({ attempt_id: attempt.id }).delete());
  t.regex(remove!.message, /attempt receipts are immutable: DELETE/);
  t.deepEqual(await receiptRows(w, job.id), before);
  // Removing the job itself (the API never does) takes its receipts along.
  await w.db('jobs').where({ id: job.id }).delete();
  t.deepEqual(await receiptRows(w, job.id), []);
});

test('fencing: usage or phases after the attempt ended, or with another token, are 409 lease lost and write nothing', async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  const call = { model: 'gpt-5', input_tokens: 100, output_tokens: 10 };
  assertConflict(t, await postUsage(w, job.id, attempt, [call], randomUUID()), /^lease lost: attempt 1 \(.*\) of job .*: the lease token does not match$/);
  assertConflict(t, await postPhases(w, job.id, attempt, PHASES, randomUUID()), /the lease token does not match/);
  t.deepEqual(await usageRows(w, attempt.id), []);
  await recordUsage(t, w, job.id, attempt, [call]);
  await complete(w, job.id, attempt, { status: 'success' });
  const receipt = await receiptOf(t, w, job.id, attempt.id);

  assertConflict(t, await postUsage(w, job.id, attempt, [call]), /^lease lost: attempt 1 .*: the attempt is succeeded$/);
  assertConflict(t, await postPhases(w, job.id, attempt, PHASES), /the attempt is succeeded/);
  t.is((await usageRows(w, attempt.id)).length, 1);
  t.deepEqual(await phaseRows(w, attempt.id), []);
  t.deepEqual(await receiptOf(t, w, job.id, attempt.id), receipt);

  const expired = await claimed(t, w, (await newJob(w)).id);
  await w
    .db('job_attempts')
    .where({ id: expired.attempt.id })
    .update({ lease_expires_at: w.db.raw("now() - interval '1 second'") });
  assertConflict(t, await postUsage(w, expired.job.id, expired.attempt, [call]), /the lease expired at/);
  await w
    .db('job_attempts')
    .where({ id: expired.attempt.id })
    .update({ lease_expires_at: w.db.raw("now() + interval '1 hour'") });
  assertError(t, await postUsage(w, job.id, expired.attempt, [call]), 404, `attempt ${expired.attempt.id} of job ${job.id} not found`);
  t.deepEqual(await usageRows(w, expired.attempt.id), []);
});

test('bad input is 400 naming the field, and nothing is written: content fields, counts, phase names and order', async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  const ok = { model: 'gpt-5', input_tokens: 1, output_tokens: 1 };
  const bad = async (calls: unknown, message: string | RegExp, extra: Record<string, unknown> = {}) =>
    assertError(t, await w.owner.api.post(`/jobs/${job.id}/attempts/${attempt.id}/usage`, { lease_token: attempt.lease_token, calls, ...extra }), 400, message);
  await bad([ok, { ...ok, prompt: 'fix the bug' }], '"calls[1].prompt" is not allowed');
  await bad([{ ...ok, response: 'done' }], '"calls[0].response" is not allowed');
  await bad([ok], '"messages" is not allowed', { messages: ['hi'] });
  await bad([], '"calls" must contain at least 1 items');
  await bad(
    Array.from({ length: 101 }, () => ok),
    '"calls" must contain less than or equal to 100 items',
  );
  await bad([{ ...ok, input_tokens: -1 }], '"calls[0].input_tokens" must be greater than or equal to 0');
  await bad([ok, { ...ok, reported_cost_usd: -0.01 }], '"calls[1].reported_cost_usd" must be greater than or equal to 0');
  await bad([{ ...ok, reported_cost_usd: 'cheap' }], '"calls[0].reported_cost_usd" must be a number');
  await bad([{ ...ok, output_tokens: 1.5 }], '"calls[0].output_tokens" must be an integer');
  await bad([{ input_tokens: 1, output_tokens: 1 }], '"calls[0].model" is required');
  await bad([{ ...ok, reasoning_tokens: 2 }], '"calls[0].reasoning_tokens" must not exceed "calls[0].output_tokens" (it is part of them)');
  t.deepEqual(await usageRows(w, attempt.id), []);

  const badPhases = async (phases: unknown, message: string | RegExp) =>
    assertError(t, await postPhases(w, job.id, attempt, phases as unknown[]), 400, message);
  await badPhases([{ ...PHASES[0], name: 'Execute' }], /^"phases\[0\]\.name" with value "Execute" fails to match the lower-case words/);
  await badPhases([{ ...PHASES[0], name: 'run tests' }], /fails to match the lower-case words/);
  await badPhases([PHASES[0], { name: 'execute', started_at: at(10), ended_at: at(9) }], '"phases[1].ended_at" must not be before "phases[1].started_at"');
  await badPhases([PHASES[0], PHASES[0]], /^"phases\[1\]" contains a duplicate value$/);
  await badPhases([{ ...PHASES[0], started_at: 'yesterday' }], /^"phases\[0\]\.started_at" must be in ISO 8601 date format$/);
  t.deepEqual(await phaseRows(w, attempt.id), []);

  // A phase reported again replaces its times.
  t.is((await postPhases(w, job.id, attempt, [PHASES[2]])).statusCode, 201);
  t.is((await postPhases(w, job.id, attempt, [{ ...PHASES[2], ended_at: at(5) }])).statusCode, 201);
  t.like(await phaseRows(w, attempt.id), [{ name: 'execute', ended_at: new Date(at(5)) }]);
});

test('receipt reads: 404 before any attempt ended, while running, for another job, and outside the org; the latest one otherwise', async (t) => {
  const job = await newJob(w, { hints: { max_attempts: 3 } });
  assertError(t, await w.owner.api.get(`/jobs/${job.id}/receipt`), 404, `job ${job.id} has no receipt yet`);
  const first = await claimed(t, w, job.id);
  assertError(
    t,
    await w.owner.api.get(`/jobs/${job.id}/attempts/${first.attempt.id}/receipt`),
    404,
    `attempt 1 (${first.attempt.id}) of job ${job.id} has no receipt yet: it is still running`,
  );
  await complete(w, job.id, first.attempt, { status: 'failed', reason: 'flaky' });
  const second = await claimed(t, w, job.id);
  t.like((await w.owner.api.get(`/jobs/${job.id}/receipt`)).body, { attempt_number: 1, status: 'failed' });
  await complete(w, job.id, second.attempt, { status: 'success' });
  t.like((await w.owner.api.get(`/jobs/${job.id}/receipt`)).body, { attempt_number: 2, status: 'succeeded' });
  t.deepEqual(
    (await attemptsOf(w, job.id)).map((a: { attempt_number: number }) => a.attempt_number),
    [1, 2],
  );

  const other = await newJob(w);
  assertError(
    t,
    await w.owner.api.get(`/jobs/${other.id}/attempts/${first.attempt.id}/receipt`),
    404,
    `attempt ${first.attempt.id} of job ${other.id} not found`,
  );
  assertError(
    t,
    await w.owner.api.get(`/jobs/${job.id}/attempts/not-a-uuid/receipt`),
    400,
    '"attempt_id" must be an attempt id (a UUID) or <project_id>:<job_id>:<attempt_number>',
  );
  for (const path of [`/jobs/${job.id}/receipt`, `/jobs/${job.id}/attempts/${first.attempt.id}/receipt`]) {
    assertError(t, await w.outsider.api.get(path), 404, `job ${job.id} not found`);
  }
  assertError(
    t,
    await w.outsider.api.post(`/jobs/${job.id}/attempts/${second.attempt.id}/usage`, {
      lease_token: second.attempt.lease_token,
      calls: [{ model: 'x', input_tokens: 1, output_tokens: 1 }],
    }),
    404,
    `job ${job.id} not found`,
  );
});

test('usage racing the end of the attempt: every report is either in the receipt or refused with 409, never lost', async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  const call = { model: 'gpt-5', input_tokens: 1, output_tokens: 1 };
  const reports = Array.from({ length: 20 }, () => postUsage(w, job.id, attempt, [call, call]));
  const [ended, ...answers] = await Promise.all([complete(w, job.id, attempt, { status: 'success' }), ...reports]);
  t.is(ended.statusCode, 200);
  t.true(
    answers.every((r) => r.statusCode === 201 || r.statusCode === 409),
    JSON.stringify(answers.map((r) => r.statusCode)),
  );
  const accepted = answers.filter((r) => r.statusCode === 201).length * 2;
  const receipt = await receiptOf(t, w, job.id, attempt.id);
  t.is(receipt.llm.calls, accepted);
  t.is((await usageRows(w, attempt.id)).length, accepted);
});
