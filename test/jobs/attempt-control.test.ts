import test from 'ava';
import { AttemptControlToken, type AttemptControl } from '../../core/ports/attempts.ts';
import { JobPhaseListeners } from '../../core/ports/jobs.ts';
import { LeaseLost } from '../../core/errors.ts';
import { attemptRow, claimWorld, newJob, type World } from './claim-helpers.ts';

/** The AttemptControl port the in-process worker uses: typed LeaseLost, and a completion that is one transaction. */
let w: World;
let control: AttemptControl;
let failPhaseChanges = false;
test.before(async () => {
  w = await claimWorld('actl');
  const container = w.ctx.srv.server.app.container;
  control = container.resolve(AttemptControlToken);
  container.resolve(JobPhaseListeners).add(async () => {
    if (failPhaseChanges) throw new Error('a phase listener failed');
  });
});
test.after.always(() => w?.ctx.srv.stop());

const GIT = { resolved_ref: 'main', resolved_sha: 'a'.repeat(40), resolved_branch: 'main', ref_source: 'project', pushed: false, commits: [] };

test.serial('a stale token or an attempt that is gone is LeaseLost, of the kind the HTTP edge answers 409 or 404 for', async (t) => {
  const job = await newJob(w);
  const { attempt } = await w.claims.claim(job.id, 'actl-worker');
  const stale = await t.throwsAsync(control.heartbeat({ jobId: job.id, attemptId: attempt.id, leaseToken: crypto.randomUUID() }), { instanceOf: LeaseLost });
  t.is(stale!.kind, 'conflict');
  const gone = await t.throwsAsync(control.heartbeat({ jobId: job.id, attemptId: crypto.randomUUID(), leaseToken: attempt.lease_token }), {
    instanceOf: LeaseLost,
  });
  t.is(gone!.kind, 'not_found');
  const noJob = await t.throwsAsync(control.release({ jobId: `${job.id}x`, attemptId: attempt.id, leaseToken: attempt.lease_token }), {
    instanceOf: LeaseLost,
  });
  t.is(noJob!.kind, 'not_found');
});

test.serial('a completion whose end fails leaves nothing written, not even the resolved git', async (t) => {
  const job = await newJob(w);
  const { attempt } = await w.claims.claim(job.id, 'actl-worker');
  const lease = { jobId: job.id, attemptId: attempt.id, leaseToken: attempt.lease_token };
  failPhaseChanges = true;
  try {
    await t.throwsAsync(control.complete(lease, { result: { status: 'success', summary: 'ok' }, git: GIT }), { message: 'a phase listener failed' });
  } finally {
    failPhaseChanges = false;
  }
  t.like(await attemptRow(w, attempt.id), { status: 'running', git: null });
  t.is(await control.complete(lease, { result: { status: 'success', summary: 'ok' }, git: GIT }), 'done');
  t.deepEqual((await attemptRow(w, attempt.id)).git, GIT);
  t.deepEqual((await w.db('jobs').where({ id: job.id }).first('resolved_git')).resolved_git, GIT);
});
