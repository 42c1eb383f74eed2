import test from 'ava';
import { unique } from '../orgs/helpers.ts';
import { WAITING_BACKOFF_SECONDS } from '../../plugins/jobs/claims/claims.ts';
import {
  ISO,
  assertConflict,
  attemptRow,
  blockedBy,
  claimWorld,
  claimed,
  complete,
  gatesHeldBy,
  jobRow,
  newJob,
  secondsFromNow,
  type World,
} from './claim-helpers.ts';

let w: World;
test.before(async () => {
  w = await claimWorld('attempts');
});
test.after.always(async () => {
  await w?.ctx.srv.stop();
});

const reviewRows = (jobId: string) => w.db('job_reviews').where({ job_id: jobId });

test('a new job without a phase is ready', async (t) => {
  t.is((await newJob(w)).phase, 'ready');
});

test('success with review_required none: done, closed; the attempt succeeded with the summary and frees its gates', async (t) => {
  const gate = unique('g');
  const job = await newJob(w, { hints: { gates: [gate] } });
  const { attempt } = await claimed(t, w, job.id);
  const res = await complete(w, job.id, attempt, { status: 'success', summary: 'fixed it' });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.like(res.body.job, { phase: 'done', review_status: null });
  t.regex(res.body.job.closed_at, ISO);
  t.like(res.body.attempt, {
    status: 'succeeded',
    result_status: 'success',
    result_summary: 'fixed it',
    error: null,
    result_json: { svc: { status: 'success', summary: 'fixed it' } },
  });
  t.regex(res.body.attempt.ended_at, ISO);
  t.false('lease_token' in res.body.attempt);
  t.deepEqual(await gatesHeldBy(w, job.id), []);
  assertConflict(t, await complete(w, job.id, attempt, { status: 'success' }), /the attempt is succeeded/);
});

test('success with review_required set: review, review_status pending; result_json is stored as sent', async (t) => {
  const job = await newJob(w, { review_required: 'human' });
  const { attempt } = await claimed(t, w, job.id);
  const block = { svc: { status: 'success', summary: 's' }, files: ['a.ts'] };
  const res = await complete(w, job.id, attempt, { status: 'success', summary: 's' }, { result_json: block });
  t.like(res.body.job, { phase: 'review', review_status: 'pending', closed_at: null });
  t.deepEqual((await attemptRow(w, attempt.id)).result_json, block);
});

test('waiting: ready again, unassigned, attempt succeeded, no review row, and a short defer backoff', async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  const res = await complete(w, job.id, attempt, { status: 'waiting', reason: 'needs input' });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.like(res.body.job, { phase: 'ready', assignee: null, review_status: null });
  t.like(res.body.attempt, { status: 'succeeded', result_status: 'waiting', result_json: { svc: { status: 'waiting', reason: 'needs input' } } });
  t.true(Math.abs(secondsFromNow(res.body.job.defer_until) - WAITING_BACKOFF_SECONDS) < 5);
  t.deepEqual(await reviewRows(job.id), []);
  assertConflict(t, await w.owner.api.post(`/jobs/${job.id}/claim`), `job ${job.id} is deferred until ${res.body.job.defer_until}`);
});

test('waiting with an unfinished blocker: ready without a backoff (the blocker holds it)', async (t) => {
  const [job, blocker] = [await newJob(w), await newJob(w)];
  const { attempt } = await claimed(t, w, job.id);
  await blockedBy(w, job.id, blocker.id);
  const res = await complete(w, job.id, attempt, { status: 'waiting' });
  t.like(res.body.job, { phase: 'ready', defer_until: null });
  assertConflict(t, await w.owner.api.post(`/jobs/${job.id}/claim`), `job ${job.id} is blocked by ${blocker.id} (ready)`);
});

test('failed without max_attempts: cancelled with a close_reason naming the failure', async (t) => {
  const gate = unique('g');
  const job = await newJob(w, { hints: { gates: [gate] } });
  const { attempt } = await claimed(t, w, job.id);
  const res = await complete(w, job.id, attempt, { status: 'failed', reason: 'tests fail' });
  t.like(res.body.job, { phase: 'cancelled', close_reason: 'attempt 1 failed (1 of 1 allowed attempts failed): tests fail' });
  t.regex(res.body.job.closed_at, ISO);
  t.like(res.body.attempt, { status: 'failed', result_status: 'failed', error: 'tests fail' });
  t.deepEqual(await gatesHeldBy(w, job.id), []);
});

test('failed with max_attempts 3: retried as new attempts until the third failure cancels', async (t) => {
  const job = await newJob(w, { hints: { max_attempts: 3 } });
  for (const n of [1, 2]) {
    const { attempt } = await claimed(t, w, job.id);
    t.is(attempt.attempt_number, n);
    const res = await complete(w, job.id, attempt, { status: 'failed' }, { error: `boom ${n}` });
    t.like(res.body.job, { phase: 'ready', assignee: null, closed_at: null });
    t.like(res.body.attempt, { status: 'failed', error: `boom ${n}` });
  }
  const { attempt } = await claimed(t, w, job.id);
  const res = await complete(w, job.id, attempt, { status: 'failed' });
  t.like(res.body.job, { phase: 'cancelled', close_reason: 'attempt 3 failed (3 of 3 allowed attempts failed): failed' });
});

test('released attempts do not use up max_attempts', async (t) => {
  const job = await newJob(w, { hints: { max_attempts: 1 } });
  const first = await claimed(t, w, job.id);
  await w.owner.api.post(`/jobs/${job.id}/release`, { attempt_id: first.attempt.id, lease_token: first.attempt.lease_token });
  const second = await claimed(t, w, job.id);
  t.like((await complete(w, job.id, second.attempt, { status: 'failed' })).body.job, { phase: 'cancelled' });
});

test('the reaper ends expired attempts as lost with their worker: freed gates, the job retried without spending max_attempts, up to 3 times; late writers are fenced', async (t) => {
  const gate = unique('g');
  const once = await newJob(w, { hints: { gates: [gate] } });
  const twice = await newJob(w, { hints: { max_attempts: 2 } });
  const live = await newJob(w);
  const runs = [await claimed(t, w, once.id), await claimed(t, w, twice.id), await claimed(t, w, live.id)];
  const expire = (ids: string[]) =>
    w
      .db('job_attempts')
      .whereIn('id', ids)
      .update({ lease_expires_at: w.db.raw("now() - interval '1 second'") });
  await expire([runs[0].attempt.id, runs[1].attempt.id]);

  const reaped = await w.claims.reapExpired();
  t.deepEqual(
    reaped.filter((r) => [once.id, twice.id, live.id].includes(r.job_id)).sort((a, b) => a.job_id.localeCompare(b.job_id)),
    [
      { job_id: once.id, attempt_id: runs[0].attempt.id, phase: 'ready' as const },
      { job_id: twice.id, attempt_id: runs[1].attempt.id, phase: 'ready' as const },
    ].sort((a, b) => a.job_id.localeCompare(b.job_id)),
    'a job with one allowed attempt is retried too: losing the worker is not its failure',
  );
  t.like(await attemptRow(w, runs[0].attempt.id), {
    status: 'cancelled',
    error: 'worker lost: the lease expired; retried without counting against max_attempts (1 of 3 such retries)',
  });
  t.like(await jobRow(w, once.id), { phase: 'ready', assignee: null, closed_at: null });
  t.like(await jobRow(w, twice.id), { phase: 'ready', assignee: null });
  t.like(await attemptRow(w, runs[2].attempt.id), { status: 'running' });
  t.deepEqual(await gatesHeldBy(w, once.id), []);

  const before = await attemptRow(w, runs[1].attempt.id);
  assertConflict(t, await complete(w, twice.id, runs[1].attempt, { status: 'success' }), /the attempt is cancelled/);
  assertConflict(
    t,
    await w.owner.api.post(`/jobs/${twice.id}/attempts/${runs[1].attempt.id}/heartbeat`, { lease_token: runs[1].attempt.lease_token }),
    /the attempt is cancelled/,
  );
  t.deepEqual(await attemptRow(w, runs[1].attempt.id), before);
  t.is((await claimed(t, w, twice.id)).attempt.attempt_number, 2);
  t.deepEqual(
    (await w.claims.reapExpired()).filter((r) => r.job_id === twice.id),
    [],
  );

  // A job that keeps losing its worker: after three free retries the next loss fails it as any attempt.
  for (let lost = 2; lost <= 4; lost++) {
    const run = await claimed(t, w, once.id);
    t.is(run.attempt.attempt_number, lost);
    await expire([run.attempt.id]);
    const [reapedOnce] = (await w.claims.reapExpired()).filter((r) => r.job_id === once.id);
    t.is(reapedOnce.phase, lost < 4 ? 'ready' : 'cancelled');
  }
  t.like(await jobRow(w, once.id), {
    phase: 'cancelled',
    close_reason: 'attempt 4 failed (1 of 1 allowed attempts failed): lease expired (its worker was lost 4 times)',
  });
});

test('attempts list: newest first, paginated, never the lease token', async (t) => {
  const job = await newJob(w, { hints: { max_attempts: 5 } });
  for (let i = 0; i < 3; i++) {
    const { attempt } = await claimed(t, w, job.id);
    await complete(w, job.id, attempt, { status: 'failed' });
  }
  await claimed(t, w, job.id);
  const url = `/projects/${w.projectA}/jobs/${job.id}/attempts`;
  const page = await w.owner.api.get(url);
  t.is(page.statusCode, 200, JSON.stringify(page.body));
  t.deepEqual(
    page.body.data.map((a: { attempt_number: number }) => a.attempt_number),
    [4, 3, 2, 1],
  );
  t.deepEqual(page.body.pagination, { limit: 10, offset: 0, count: 4, total: 4, has_more: false });
  t.true(page.body.data.every((a: object) => !('lease_token' in a)));
  t.like(page.body.data[0], { status: 'running', job_id: job.id });
  const second = await w.owner.api.get(`${url}?limit=2&offset=2`);
  t.deepEqual(
    second.body.data.map((a: { attempt_number: number }) => a.attempt_number),
    [2, 1],
  );
  t.deepEqual(second.body.pagination, { limit: 2, offset: 2, count: 2, total: 4, has_more: false });
  const past = await w.owner.api.get(`${url}?offset=10`);
  t.deepEqual(past.body.pagination, { limit: 10, offset: 10, count: 0, total: 4, has_more: false });

  const one = await w.owner.api.get(`${url}/2`);
  t.is(one.statusCode, 200);
  t.deepEqual(one.body, page.body.data[2]);
});

test('attempts read API: 404 for a missing attempt, a job of another project, or another org; 400 for bad input', async (t) => {
  const job = await newJob(w);
  await claimed(t, w, job.id);
  const inA = `/projects/${w.projectA}/jobs/${job.id}/attempts`;
  const nf = (res: { statusCode: number; body: { message: string } }, message: string) => {
    t.is(res.statusCode, 404);
    t.is(res.body.message, message);
  };
  nf(await w.owner.api.get(`${inA}/2`), `attempt 2 of job ${job.id} not found`);
  nf(await w.owner.api.get(`/projects/${w.projectA2}/jobs/${job.id}/attempts`), `job ${job.id} not found`);
  nf(await w.owner.api.get(`/projects/${w.projectA2}/jobs/${job.id}/attempts/1`), `job ${job.id} not found`);
  nf(await w.outsider.api.get(inA), `project ${w.projectA} not found`);
  nf(await w.outsider.api.get(`/projects/${w.projectB}/jobs/${job.id}/attempts`), `job ${job.id} not found`);
  for (const [url, field] of [
    [`${inA}/0`, 'attempt_number'],
    [`${inA}/x`, 'attempt_number'],
    [`${inA}?limit=0`, 'limit'],
    [`/projects/${w.projectA}/jobs/nope/attempts`, 'job_id'],
  ]) {
    const res = await w.owner.api.get(url);
    t.is(res.statusCode, 400, url);
    t.true(res.body.message.includes(`"${field}"`), res.body.message);
  }
});
