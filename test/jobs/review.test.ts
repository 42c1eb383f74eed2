import test from 'ava';
import { unique } from '../orgs/helpers.ts';
import { ISO, UUID, assertConflict, attemptRow, attemptsOf, claimWorld, claimed, complete, gatesHeldBy, jobRow, newJob, type World } from './claim-helpers.ts';

let w: World;
test.before(async () => {
  w = await claimWorld('review');
});
test.after.always(async () => {
  await w?.ctx.srv.stop();
});

const reviews = (jobId: string) => w.db('job_reviews').where({ job_id: jobId }).orderBy('id').select('action', 'text', 'actor_id');
const post = (path: string, body?: unknown) => w.owner.api.post(path, body);

/** A job in review: claimed, then submitted with a summary. */
async function inReview(t: Parameters<typeof claimed>[0], body: Record<string, unknown> = {}) {
  const job = await newJob(w, body);
  const run = await claimed(t, w, job.id);
  const res = await post(`/jobs/${job.id}/submit`, { summary: 'ready for a look' });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  return { job: res.body, attempt: run.attempt };
}

test('submit: active → review; the running attempt ends as succeeded with the summary and frees its gates', async (t) => {
  const gate = unique('g');
  const { job, attempt } = await inReview(t, { hints: { gates: [gate] } });
  t.like(job, { phase: 'review', review_status: 'pending' });
  t.like(await attemptRow(w, attempt.id), { status: 'succeeded', result_status: 'success', result_summary: 'ready for a look' });
  t.deepEqual(await gatesHeldBy(w, job.id), []);
  t.deepEqual(await reviews(job.id), [{ action: 'submit', text: 'ready for a look', actor_id: w.owner.id }]);
  assertConflict(t, await complete(w, job.id, attempt, { status: 'success' }), /the attempt is succeeded/);
});

test('approve: review → done with review_status approved; the comment is optional', async (t) => {
  const { job } = await inReview(t);
  const res = await post(`/jobs/${job.id}/approve`, { comment: 'lgtm' });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.like(res.body, { phase: 'done', review_status: 'approved' });
  t.regex(res.body.closed_at, ISO);
  t.deepEqual(
    (await reviews(job.id)).map((r) => [r.action, r.text]),
    [
      ['submit', 'ready for a look'],
      ['approve', 'lgtm'],
    ],
  );

  const other = (await inReview(t)).job;
  const bare = await w.ctx.srv.server.inject({ method: 'POST', url: `/jobs/${other.id}/approve`, headers: { authorization: `Bearer ${w.owner.token}` } });
  t.is(bare.statusCode, 200, bare.payload);
  t.like(await reviews(other.id).then((r) => r[1]), { action: 'approve', text: null });
});

test('reject: review → active with a new attempt claimed for the rejecting caller; its completion is reviewed again', async (t) => {
  const { job, attempt: first } = await inReview(t, { review_required: 'agent' });
  const res = await post(`/jobs/${job.id}/reject`, { reason: 'missing tests' });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.like(res.body.job, { phase: 'active', review_status: 'rejected', assignee: w.owner.id });
  t.like(res.body.attempt, { attempt_number: 2, status: 'running', lease_owner: w.owner.id });
  t.regex(res.body.attempt.lease_token, UUID);
  t.not(res.body.attempt.id, first.id);
  t.deepEqual(
    (await reviews(job.id)).map((r) => [r.action, r.text, r.actor_id]),
    [
      ['submit', 'ready for a look', w.owner.id],
      ['reject', 'missing tests', w.owner.id],
    ],
  );
  const done = await complete(w, job.id, res.body.attempt, { status: 'success', summary: 'tests added' });
  t.like(done.body.job, { phase: 'review', review_status: 'pending' });
});

test('reject honours gates: a key taken meanwhile is 409 with blocked_on_gates and the job stays in review', async (t) => {
  const gate = unique('g');
  const { job } = await inReview(t, { hints: { gates: [gate] } });
  await claimed(t, w, (await newJob(w, { hints: { gates: [gate] } })).id);
  const res = await post(`/jobs/${job.id}/reject`, { reason: 'again' });
  t.is(res.statusCode, 409);
  t.like(res.body, { blocked_on_gates: [gate], jobId: job.id });
  t.like(await jobRow(w, job.id), { phase: 'review', review_status: 'pending' });
  t.is((await attemptsOf(w, job.id)).length, 1);
  t.is((await reviews(job.id)).length, 1, 'no reject row');
});

test('moves the table does not allow are 409 naming the current phase', async (t) => {
  const ready = await newJob(w);
  assertConflict(t, await post(`/jobs/${ready.id}/submit`, { summary: 's' }), `job ${ready.id} is ready: submit needs a job in active`);
  assertConflict(t, await post(`/jobs/${ready.id}/approve`, {}), `job ${ready.id} is ready: approve needs a job in review`);
  assertConflict(t, await post(`/jobs/${ready.id}/reject`, { reason: 'r' }), `job ${ready.id} is ready: reject needs a job in review`);

  const active = (await claimed(t, w, (await newJob(w)).id)).job;
  assertConflict(t, await post(`/jobs/${active.id}/approve`, {}), `job ${active.id} is active: approve needs a job in review`);
  assertConflict(t, await post(`/jobs/${active.id}/reject`, { reason: 'r' }), `job ${active.id} is active: reject needs a job in review`);

  const { job: review } = await inReview(t);
  assertConflict(t, await post(`/jobs/${review.id}/submit`, { summary: 's' }), `job ${review.id} is review: submit needs a job in active`);
  assertConflict(t, await post(`/jobs/${review.id}/claim`), `job ${review.id} is review: only a ready job can be claimed`);
  assertConflict(t, await w.owner.api.patch(`/jobs/${review.id}`, { phase: 'done' }), `job ${review.id} is review: it cannot move to done this way`);

  await post(`/jobs/${review.id}/approve`, {});
  for (const [path, body, action] of [
    ['submit', { summary: 's' }, 'submit needs a job in active'],
    ['approve', {}, 'approve needs a job in review'],
    ['reject', { reason: 'r' }, 'reject needs a job in review'],
  ] as const) {
    assertConflict(t, await post(`/jobs/${review.id}/${path}`, body), `job ${review.id} is done: ${action}`);
  }
  assertConflict(t, await w.owner.api.patch(`/jobs/${review.id}`, { phase: 'cancelled' }), `job ${review.id} is done: it cannot move to cancelled this way`);
  t.is((await reviews(review.id)).length, 2);
});

test('a job in review can be cancelled, and is terminal then', async (t) => {
  const { job } = await inReview(t);
  const res = await w.owner.api.patch(`/jobs/${job.id}`, { phase: 'cancelled', close_reason: 'not needed' });
  t.like(res.body, { phase: 'cancelled', close_reason: 'not needed' });
  assertConflict(t, await post(`/jobs/${job.id}/approve`, {}), `job ${job.id} is cancelled: approve needs a job in review`);
  assertConflict(t, await post(`/jobs/${job.id}/reject`, { reason: 'r' }), `job ${job.id} is cancelled: reject needs a job in review`);
});

test('bad input is 400 naming the field, and writes nothing', async (t) => {
  const { job } = await inReview(t);
  const active = (await claimed(t, w, (await newJob(w)).id)).job;
  for (const [id, path, body, field] of [
    [active.id, 'submit', {}, 'summary'],
    [active.id, 'submit', { summary: '   ' }, 'summary'],
    [job.id, 'reject', {}, 'reason'],
    [job.id, 'reject', { reason: 5 }, 'reason'],
    [job.id, 'approve', { comment: '' }, 'comment'],
    [job.id, 'approve', { verdict: 'ok' }, 'verdict'],
  ] as const) {
    const res = await post(`/jobs/${id}/${path}`, body);
    t.is(res.statusCode, 400, `${path} ${JSON.stringify(body)}`);
    t.true(res.body.message.includes(`"${field}"`), res.body.message);
  }
  t.like(await jobRow(w, job.id), { phase: 'review' });
  t.like(await jobRow(w, active.id), { phase: 'active' });
  t.is((await reviews(job.id)).length, 1);
  t.is((await reviews(active.id)).length, 0);
});

test("another org's job is 404 for submit, approve and reject", async (t) => {
  const { job } = await inReview(t);
  for (const [path, body] of [
    ['submit', { summary: 's' }],
    ['approve', {}],
    ['reject', { reason: 'r' }],
  ] as const) {
    const res = await w.outsider.api.post(`/jobs/${job.id}/${path}`, body);
    t.is(res.statusCode, 404);
    t.is(res.body.message, `job ${job.id} not found`);
  }
  t.like(await jobRow(w, job.id), { phase: 'review' });
  t.is((await reviews(job.id)).length, 1);
});
