import test from 'ava';
import { LaneClaims } from '../../plugins/jobs/races/lane-claims.ts';
import { assertConflict, attemptsOf, claimWorld, complete, jobRow, newJob, type World } from './claim-helpers.ts';
import { assertError } from '../orgs/helpers.ts';

/**
 * The rules of a race (docs/worker.md, "Rival attempts") without a worker: lanes claimed concurrently, one running
 * attempt per lane, the lease and the reaper as for any attempt (a crash mid-race re-queues the
 * lane), the org's running-attempt quota, a cancel ending every lane, and another org's job unseen.
 */
let w: World;
let lanes: LaneClaims;
test.before(async () => {
  w = await claimWorld('races', { overrides: { limits: { org: { running_attempts: 3 } } } });
  lanes = w.ctx.srv.server.app.container.resolve(LaneClaims);
});
test.after.always(() => w?.ctx.srv.stop());

const VARIANTS = [{ harness: 'harness_a' }, { harness: 'harness_b', model: 'm2' }, { harness: 'harness_c', reasoning_effort: 'low' }];
const lanesOf = (jobId: string) => w.db('job_race_lanes').where({ job_id: jobId }).orderBy('lane').pluck('status');

async function raced(variants = VARIANTS): Promise<string> {
  const job = await newJob(w, { phase: 'backlog' });
  const res = await w.owner.api.post(`/jobs/${job.id}/attempts`, { variants, check_command: 'npm test' });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  return job.id;
}

test.serial('lanes are claimed side by side, one running attempt each; a lost one runs again; the job waits for the choice', async (t) => {
  const jobId = await raced();
  // Two claimers at once never wait for each other: one takes the job's lanes it has room for, the
  // other skips that job while the first one's transaction holds it (its next pass takes the rest).
  const [first, second] = await Promise.all([lanes.claim('a', 2, 60), lanes.claim('b', 2, 60)]);
  t.true(first.length + second.length >= 2);
  const claimed = [...first, ...second, ...(await lanes.claim('c', 5, 60))];
  t.is(claimed.length, 3, 'three lanes, three attempts, each lane once whichever claimer took it');
  t.deepEqual(claimed.map((c) => c.attempt.race_lane).sort(), [1, 2, 3]);
  t.deepEqual(claimed.map((c) => c.attempt.attempt_number).sort(), [1, 2, 3]);
  t.deepEqual(await lanesOf(jobId), ['running', 'running', 'running']);
  t.deepEqual(await lanes.claim('c', 5, 60), [], 'a running lane is not claimed again');
  assertConflict(t, await w.owner.api.post(`/jobs/${jobId}/submit`, { summary: 'mine' }), /is raced: each of its attempts ends with its own result/);
  await t.throwsAsync(
    w.db('job_attempts').insert({ id: crypto.randomUUID(), job_id: jobId, attempt_number: 9, status: 'running', race_lane: 1 }),
    { message: /job_attempts_one_running_per_lane/ },
    'one running attempt per lane, whatever writes it',
  );

  // A worker dies mid-race: its lease runs out and the reaper re-queues that lane alone.
  const lost = claimed.find((c) => c.attempt.race_lane === 2)!;
  await w
    .db('job_attempts')
    .where({ id: lost.attempt.id })
    .update({ lease_expires_at: w.db.raw("now() - interval '1 second'") });
  t.deepEqual(
    (await w.claims.reapExpired()).map((r) => [r.attempt_id, r.phase]),
    [[lost.attempt.id, 'active']],
  );
  t.deepEqual(await lanesOf(jobId), ['running', 'ready', 'running']);
  const [again] = await lanes.claim('d', 5, 60);
  t.like(again.attempt, { race_lane: 2, attempt_number: 4 });

  for (const c of [...claimed.filter((c) => c !== lost), again]) {
    const ended = await complete(
      w,
      jobId,
      c.attempt,
      c.attempt.race_lane === 3 ? { status: 'failed', reason: 'no' } : { status: 'success', summary: `lane ${c.attempt.race_lane}` },
    );
    t.is(ended.statusCode, 200, JSON.stringify(ended.body));
    t.is(ended.body.job.phase, 'active', 'a lane ending leaves the job to the choice');
  }
  t.deepEqual(await lanesOf(jobId), ['ended', 'ended', 'ended']);
  const compared = (await w.owner.api.get(`/jobs/${jobId}/race`)).body;
  t.deepEqual(
    compared.attempts.map((a: any) => [a.race_lane, a.attempt_number, a.status]),
    [
      [1, claimed.find((c) => c.attempt.race_lane === 1)!.attempt.attempt_number, 'succeeded'],
      [2, lost.attempt.attempt_number, 'cancelled'],
      [2, 4, 'succeeded'],
      [3, claimed.find((c) => c.attempt.race_lane === 3)!.attempt.attempt_number, 'failed'],
    ],
  );
  t.deepEqual(compared.lanes[1], { lane: 2, variant: VARIANTS[1], status: 'ended', worker_losses: 1 });

  const failed = claimed.find((c) => c.attempt.race_lane === 3)!.attempt.attempt_number;
  assertError(t, await w.owner.api.post(`/jobs/${jobId}/attempts/${failed}/choose`), 422, /did not succeed/);
  assertError(t, await w.outsider.api.post(`/jobs/${jobId}/attempts/4/choose`), 404, /not found/);
  t.is((await w.outsider.api.get(`/jobs/${jobId}/race`)).statusCode, 404);
  const chose = await w.owner.api.post(`/jobs/${jobId}/attempts/4/choose`);
  t.is(chose.statusCode, 200, JSON.stringify(chose.body));
  t.is(chose.body.job.phase, 'done');
  t.like(chose.body.cleanup, { branches: [], deleted: true });
  t.is((await jobRow(w, jobId)).phase, 'done');
});

test.serial('a choice waits for every lane; the quota holds lanes back; a cancel ends every lane', async (t) => {
  const jobId = await raced([...VARIANTS, { harness: 'harness_d' }]);
  const claimed = await lanes.claim('q', 10, 60);
  t.is(claimed.length, 3, 'limits.org.running_attempts 3: the fourth lane waits');
  t.deepEqual(await lanesOf(jobId), ['running', 'running', 'running', 'ready']);
  await complete(w, jobId, claimed[0].attempt, { status: 'success' });
  assertConflict(t, await w.owner.api.post(`/jobs/${jobId}/attempts/1/choose`), /race lanes 2, 3, 4 have not ended yet/);
  t.is((await lanes.claim('q', 10, 60)).length, 1, 'a place freed: the fourth lane runs');

  const cancelled = await w.owner.api.patch(`/jobs/${jobId}`, { phase: 'cancelled', close_reason: 'enough' });
  t.is(cancelled.statusCode, 200, JSON.stringify(cancelled.body));
  t.deepEqual(await lanesOf(jobId), ['ended', 'ended', 'ended', 'ended']);
  t.deepEqual(
    (await attemptsOf(w, jobId)).map((a: any) => a.status),
    ['succeeded', 'cancelled', 'cancelled', 'cancelled'],
  );
  assertConflict(t, await w.owner.api.post(`/jobs/${jobId}/attempts/1/choose`), /is cancelled/);
});

test.serial('only a backlog or ready job is raced; a profile must be in the manifest', async (t) => {
  const jobId = await raced();
  assertConflict(t, await w.owner.api.post(`/jobs/${jobId}/attempts`, { variants: VARIANTS }), /is active: only a backlog or ready job can be raced/);
  const other = await newJob(w, { phase: 'backlog' });
  assertError(t, await w.owner.api.post(`/jobs/${other.id}/attempts`, { profile: 'rivals' }), 422, /no agent profile 'rivals'/);
  assertError(t, await w.outsider.api.post(`/jobs/${other.id}/attempts`, { variants: VARIANTS }), 404, /not found/);
  await w.owner.api.patch(`/jobs/${jobId}`, { phase: 'cancelled' });
});

test.serial('a chosen attempt goes to review when the job asks for one; after a rejection the job is worked on as any job', async (t) => {
  const job = await newJob(w, { phase: 'backlog', review_required: 'human' });
  t.is((await w.owner.api.post(`/jobs/${job.id}/attempts`, { variants: VARIANTS.slice(0, 2) })).statusCode, 201);
  for (const c of await lanes.claim('r', 5, 60))
    t.is((await complete(w, job.id, c.attempt, { status: 'success', summary: `lane ${c.attempt.race_lane}` })).statusCode, 200);
  const chose = await w.owner.api.post(`/jobs/${job.id}/attempts/2/choose`);
  t.like(chose.body.job, { phase: 'review', review_status: 'pending' });
  const rejected = await w.owner.api.post(`/jobs/${job.id}/reject`, { reason: 'not quite' });
  t.is(rejected.statusCode, 200, JSON.stringify(rejected.body));
  t.like(rejected.body.attempt, { attempt_number: 3, race_lane: null });
  const submitted = await w.owner.api.post(`/jobs/${job.id}/submit`, { summary: 'fixed by hand' });
  t.is(submitted.statusCode, 200, JSON.stringify(submitted.body));
  t.is(submitted.body.phase, 'review');
});
