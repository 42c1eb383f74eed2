import test from 'ava';
import { unique } from '../orgs/helpers.ts';
import {
  ISO,
  UUID,
  assertConflict,
  attemptRow,
  attemptsOf,
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
  w = await claimWorld('claims');
});
test.after.always(async () => {
  await w?.ctx.srv.stop();
});

const ATTEMPT_FIELDS = [
  'attempt_number',
  'check_result',
  'chosen',
  'ended_at',
  'error',
  'git',
  'id',
  'job_id',
  'lease_expires_at',
  'lease_owner',
  'race_lane',
  'result_json',
  'result_status',
  'result_summary',
  'started_at',
  'status',
];

test('claim: a ready job becomes active for the caller, with a running attempt, a lease and its token', async (t) => {
  const job = await newJob(w);
  const { job: active, attempt } = await claimed(t, w, job.id);
  t.like(active, { id: job.id, phase: 'active', assignee: w.owner.id });
  t.deepEqual(Object.keys(attempt).sort(), [...ATTEMPT_FIELDS, 'lease_token'].sort());
  t.like(attempt, { job_id: job.id, attempt_number: 1, status: 'running', lease_owner: w.owner.id, ended_at: null, result_status: null });
  t.regex(attempt.id, UUID);
  t.regex(attempt.lease_token, UUID);
  t.regex(attempt.lease_expires_at as string, ISO);
  t.true(Math.abs(secondsFromNow(attempt.lease_expires_at as string) - 300) < 10, 'default lease 300 s');
  t.like(await attemptRow(w, attempt.id), { lease_token: attempt.lease_token, status: 'running' });
});

test('claim: owner and lease_seconds are honoured; an empty body is fine', async (t) => {
  const job = await newJob(w);
  const { job: active, attempt } = await claimed(t, w, job.id, { owner: 'agent-7', lease_seconds: 60 });
  t.is(active.assignee, 'agent-7');
  t.is(attempt.lease_owner, 'agent-7');
  t.true(Math.abs(secondsFromNow(attempt.lease_expires_at as string) - 60) < 10);
  const other = await newJob(w);
  const res = await w.ctx.srv.server.inject({ method: 'POST', url: `/jobs/${other.id}/claim`, headers: { authorization: `Bearer ${w.owner.token}` } });
  t.is(res.statusCode, 200, res.payload);
});

test('claim: only a ready job (409 naming the phase; nothing written)', async (t) => {
  for (const phase of ['idea', 'backlog'] as const) {
    const job = await newJob(w, { phase });
    assertConflict(t, await w.owner.api.post(`/jobs/${job.id}/claim`), `job ${job.id} is ${phase}: only a ready job can be claimed`);
    t.deepEqual(await attemptsOf(w, job.id), []);
  }
  const job = await newJob(w);
  await claimed(t, w, job.id);
  assertConflict(t, await w.owner.api.post(`/jobs/${job.id}/claim`), `job ${job.id} is active: only a ready job can be claimed`);
  t.is((await attemptsOf(w, job.id)).length, 1);
});

test('claim: a deferred job waits until defer_until', async (t) => {
  const until = new Date(Date.now() + 3_600_000).toISOString();
  const job = await newJob(w, { defer_until: until });
  assertConflict(t, await w.owner.api.post(`/jobs/${job.id}/claim`), `job ${job.id} is deferred until ${until}`);
  t.deepEqual(await attemptsOf(w, job.id), []);
  const past = await newJob(w, { defer_until: new Date(Date.now() - 1000).toISOString() });
  await claimed(t, w, past.id);
});

test('claim: blocked jobs answer 409 naming their unfinished blockers; done and cancelled blockers unblock', async (t) => {
  const [job, b1, b2] = [await newJob(w), await newJob(w), await newJob(w)];
  await blockedBy(w, job.id, b1.id);
  await blockedBy(w, job.id, b2.id);
  const names = [b1.id, b2.id].sort();
  assertConflict(t, await w.owner.api.post(`/jobs/${job.id}/claim`), `job ${job.id} is blocked by ${names[0]} (ready), ${names[1]} (ready)`);
  const run = await claimed(t, w, b1.id);
  t.is((await complete(w, b1.id, run.attempt, { status: 'success' })).statusCode, 200);
  assertConflict(t, await w.owner.api.post(`/jobs/${job.id}/claim`), `job ${job.id} is blocked by ${b2.id} (ready)`);
  t.is((await w.owner.api.patch(`/jobs/${b2.id}`, { phase: 'cancelled' })).statusCode, 200);
  t.like((await claimed(t, w, job.id)).job, { phase: 'active' });
});

test('gates: a key held by another job is 409 with blocked_on_gates and jobId; release frees it', async (t) => {
  const [g1, g2, g3] = [unique('g'), unique('g'), unique('g')];
  const first = await newJob(w, { hints: { gates: [g1, g2] } });
  const second = await newJob(w, { hints: { gates: [g3, g2] } });
  const run = await claimed(t, w, first.id);
  t.deepEqual(await gatesHeldBy(w, first.id), [g1, g2].sort());

  const res = await w.owner.api.post(`/jobs/${second.id}/claim`);
  t.is(res.statusCode, 409);
  t.deepEqual(res.body, {
    statusCode: 409,
    error: 'Conflict',
    message: `job ${second.id} waits for gates held by other jobs: ${g2}`,
    blocked_on_gates: [g2],
    jobId: second.id,
  });
  t.deepEqual(await gatesHeldBy(w, second.id), [], 'the free key g3 was not kept');
  t.deepEqual(await attemptsOf(w, second.id), []);
  t.like(await jobRow(w, second.id), { phase: 'ready', assignee: null });

  const released = await w.owner.api.post(`/jobs/${first.id}/release`, { attempt_id: run.attempt.id, lease_token: run.attempt.lease_token });
  t.is(released.statusCode, 200, JSON.stringify(released.body));
  t.deepEqual(await gatesHeldBy(w, first.id), []);
  await claimed(t, w, second.id);
  t.deepEqual(await gatesHeldBy(w, second.id), [g2, g3].sort());
});

test('gates belong to a project: the same key in another project does not contend', async (t) => {
  const gate = unique('shared');
  const a = await newJob(w, { hints: { gates: [gate] } });
  const b = await newJob(w, { hints: { gates: [gate] } }, w.projectA2);
  await claimed(t, w, a.id);
  await claimed(t, w, b.id);
});

test('release: the attempt ends cancelled, the job is ready and unassigned; a second release is 409', async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  const body = { attempt_id: attempt.id, lease_token: attempt.lease_token };
  const res = await w.owner.api.post(`/jobs/${job.id}/release`, body);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.like(res.body.job, { phase: 'ready', assignee: null });
  t.like(res.body.attempt, { id: attempt.id, status: 'cancelled', error: 'released' });
  t.false('lease_token' in res.body.attempt);
  t.regex(res.body.attempt.ended_at, ISO);
  assertConflict(t, await w.owner.api.post(`/jobs/${job.id}/release`, body), /^lease lost: .*the attempt is cancelled$/);
  const again = await claimed(t, w, job.id);
  t.is(again.attempt.attempt_number, 2);
});

test('fencing: a wrong token is 409 and writes nothing; an unknown attempt is 404', async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  const wrong = '00000000-0000-4000-8000-000000000000';
  const before = await attemptRow(w, attempt.id);
  assertConflict(
    t,
    await w.owner.api.post(`/jobs/${job.id}/release`, { attempt_id: attempt.id, lease_token: wrong }),
    /^lease lost: .*the lease token does not match$/,
  );
  assertConflict(t, await complete(w, job.id, { id: attempt.id, lease_token: wrong }, { status: 'success' }), /lease token does not match/);
  assertConflict(t, await w.owner.api.post(`/jobs/${job.id}/attempts/${attempt.id}/heartbeat`, { lease_token: wrong }), /lease token does not match/);
  t.deepEqual(await attemptRow(w, attempt.id), before);
  t.like(await jobRow(w, job.id), { phase: 'active' });
  const res = await w.owner.api.post(`/jobs/${job.id}/release`, { attempt_id: wrong, lease_token: attempt.lease_token });
  t.is(res.statusCode, 404);
  t.is(res.body.message, `attempt ${wrong} of job ${job.id} not found`);
});

test('fencing: after a release, a late complete or heartbeat with the old token is 409 and writes nothing', async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  await w.owner.api.post(`/jobs/${job.id}/release`, { attempt_id: attempt.id, lease_token: attempt.lease_token });
  const next = await claimed(t, w, job.id);
  const before = [await attemptRow(w, attempt.id), await attemptRow(w, next.attempt.id), await jobRow(w, job.id)];
  assertConflict(t, await complete(w, job.id, attempt, { status: 'success', summary: 'late' }), /^lease lost: attempt 1 .*the attempt is cancelled$/);
  assertConflict(
    t,
    await w.owner.api.post(`/jobs/${job.id}/attempts/${attempt.id}/heartbeat`, { lease_token: attempt.lease_token }),
    /the attempt is cancelled/,
  );
  t.deepEqual([await attemptRow(w, attempt.id), await attemptRow(w, next.attempt.id), await jobRow(w, job.id)], before);
});

test('fencing: an expired lease can be neither renewed nor used to complete', async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  await w
    .db('job_attempts')
    .where({ id: attempt.id })
    .update({ lease_expires_at: w.db.raw("now() - interval '1 second'") });
  const before = await attemptRow(w, attempt.id);
  assertConflict(
    t,
    await w.owner.api.post(`/jobs/${job.id}/attempts/${attempt.id}/heartbeat`, { lease_token: attempt.lease_token }),
    /^lease lost: .*the lease expired at /,
  );
  assertConflict(t, await complete(w, job.id, attempt, { status: 'success' }), /the lease expired at/);
  t.deepEqual(await attemptRow(w, attempt.id), before);
});

test('heartbeat: extends the lease by lease_seconds (default 300)', async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id, { lease_seconds: 30 });
  const url = `/jobs/${job.id}/attempts/${attempt.id}/heartbeat`;
  const res = await w.owner.api.post(url, { lease_token: attempt.lease_token, lease_seconds: 900 });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body).sort(), ATTEMPT_FIELDS);
  t.true(Math.abs(secondsFromNow(res.body.lease_expires_at) - 900) < 10);
  const again = await w.owner.api.post(url, { lease_token: attempt.lease_token });
  t.true(Math.abs(secondsFromNow(again.body.lease_expires_at) - 300) < 10);
});

test('cancelling an active job ends its attempt and frees its gates; cancelled is terminal', async (t) => {
  const gate = unique('g');
  const job = await newJob(w, { hints: { gates: [gate] } });
  const { attempt } = await claimed(t, w, job.id);
  const res = await w.owner.api.patch(`/jobs/${job.id}`, { phase: 'cancelled', close_reason: 'superseded' });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.like(res.body, { phase: 'cancelled', close_reason: 'superseded' });
  t.regex(res.body.closed_at, ISO);
  t.like(await attemptRow(w, attempt.id), { status: 'cancelled', error: 'job cancelled' });
  t.deepEqual(await gatesHeldBy(w, job.id), []);
  await claimed(t, w, (await newJob(w, { hints: { gates: [gate] } })).id);

  assertConflict(t, await complete(w, job.id, attempt, { status: 'success' }), /the attempt is cancelled/);
  assertConflict(t, await w.owner.api.post(`/jobs/${job.id}/claim`), `job ${job.id} is cancelled: only a ready job can be claimed`);
  for (const phase of ['ready', 'idea', 'active', 'done']) {
    assertConflict(t, await w.owner.api.patch(`/jobs/${job.id}`, { phase }), `job ${job.id} is cancelled: it cannot move to ${phase} this way`);
  }
  t.like(await jobRow(w, job.id), { phase: 'cancelled', close_reason: 'superseded' });
});

test('bad input is 400 naming the fields, and writes nothing', async (t) => {
  const job = await newJob(w);
  const bad = async (url: string, body: unknown, fields: string[]) => {
    const res = await w.owner.api.post(url, body);
    t.is(res.statusCode, 400, `${url} ${JSON.stringify(body)}`);
    for (const f of fields) t.true(res.body.message.includes(`"${f}"`), `${res.body.message} names ${f}`);
  };
  await bad(`/jobs/${job.id}/claim`, { owner: '', lease_seconds: 0, extra: 1 }, ['owner', 'lease_seconds', 'extra']);
  await bad(`/jobs/${job.id}/claim`, { lease_seconds: 86_401 }, ['lease_seconds']);
  t.deepEqual(await attemptsOf(w, job.id), []);
  const { attempt } = await claimed(t, w, job.id);
  await bad(`/jobs/${job.id}/release`, {}, ['attempt_id', 'lease_token']);
  await bad(`/jobs/${job.id}/release`, { attempt_id: 'nope', lease_token: 'nope' }, ['attempt_id', 'lease_token']);
  await bad(`/jobs/${job.id}/attempts/not-a-uuid/heartbeat`, { lease_token: attempt.lease_token }, ['attempt_id']);
  await bad(`/jobs/${job.id}/attempts/${attempt.id}/complete`, { result: { status: 'done' } }, ['lease_token', 'result.status']);
  await bad(`/jobs/${job.id}/attempts/${attempt.id}/complete`, { lease_token: attempt.lease_token }, ['result']);
  await bad(
    `/jobs/${job.id}/attempts/${attempt.id}/complete`,
    { lease_token: attempt.lease_token, result: { status: 'success', summary: 7 }, result_json: [] },
    ['result.summary', 'result_json'],
  );
  t.like(await attemptRow(w, attempt.id), { status: 'running', ended_at: null });
});

test("another org's job is 404 for every claim route, and nothing changes", async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  const nf = `job ${job.id} not found`;
  const tokenBody = { lease_token: attempt.lease_token };
  for (const [url, body] of [
    [`/jobs/${job.id}/claim`, {}],
    [`/jobs/${job.id}/release`, { attempt_id: attempt.id, ...tokenBody }],
    [`/jobs/${job.id}/attempts/${attempt.id}/heartbeat`, tokenBody],
    [`/jobs/${job.id}/attempts/${attempt.id}/complete`, { ...tokenBody, result: { status: 'success' } }],
  ] as const) {
    const res = await w.outsider.api.post(url, body);
    t.is(res.statusCode, 404, url);
    t.is(res.body.message, nf);
  }
  t.like(await attemptRow(w, attempt.id), { status: 'running' });
  t.like(await jobRow(w, job.id), { phase: 'active' });
});
