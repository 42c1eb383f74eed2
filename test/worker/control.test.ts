import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { alive, attemptsOf, finished, logLines, scriptJob, until, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * Timeouts, cancellation, heartbeats and a lost lease, each with a real process tree. The trees
 * write their pids into the test's scratch folder, which the attempt sandbox hides, so these run
 * unsandboxed; test/security/sandbox.test.ts kills sandboxed trees.
 */
let w: WorkerWorld;
test.before(async () => {
  w = await workerWorld('wctl', { overrides: { worker: { sandbox: { mode: 'off' } } } });
});
test.after.always(() => w?.stop());

/** A script that leaves a background child (its pid in a file) and waits. */
function treeScript(name: string): { run: string; pid: () => Promise<number> } {
  const file = path.join(w.scratch, `${name}.pid`);
  return {
    run: `sleep 60 & echo $! > ${file}; echo started; wait`,
    pid: () => until(async () => existsSync(file) && Number(readFileSync(file, 'utf8').trim()), `${name} pid`),
  };
}

test.serial('hints.timeout_seconds kills the whole process tree and fails the attempt', async (t) => {
  const tree = treeScript('timeout');
  const jobId = await scriptJob(w, tree.run, { timeout_seconds: 1 });
  const pid = await tree.pid();
  t.true(alive(pid));
  const job = await finished(w, jobId);
  t.is(job.phase, 'cancelled');
  const [attempt] = await attemptsOf(w, jobId);
  t.is(attempt.status, 'failed');
  t.is(attempt.error, 'timed out after 1 s (hints.timeout_seconds); the process tree was killed');
  await until(async () => !alive(pid), 'the background child to die', 5000);
  t.pass();
});

test.serial('cancelling a running job kills its process tree; the attempt ends cancelled and nothing is reported after', async (t) => {
  const tree = treeScript('cancel');
  const jobId = await scriptJob(w, tree.run);
  const pid = await tree.pid();
  const cancelled = await w.api.patch(`/jobs/${jobId}`, { phase: 'cancelled', close_reason: 'changed my mind' });
  t.is(cancelled.statusCode, 200, JSON.stringify(cancelled.body));
  await until(async () => !alive(pid), 'the background child to die', 10_000);
  const [attempt] = await attemptsOf(w, jobId);
  t.like(attempt, { status: 'cancelled', error: 'job cancelled' });
  const lines = await until(async () => {
    const all = await logLines(w, jobId, attempt.id);
    return all.some((l) => l.line.startsWith('stopped:')) && all;
  }, 'the stop to be logged');
  t.true(lines.some((l) => l.line === 'stopped: job cancelled: changed my mind'));
  t.is((await w.api.get(`/jobs/${jobId}`)).body.close_reason, 'changed my mind');
});

test.serial('a running attempt renews its lease; when the lease is lost the process tree is killed', async (t) => {
  const tree = treeScript('lease');
  const jobId = await scriptJob(w, tree.run);
  const pid = await tree.pid();
  const db = w.srv.kernel.db;
  const first = (await db('job_attempts').where({ job_id: jobId }).first('lease_expires_at')).lease_expires_at as Date;
  await until(
    async () => {
      const now = (await db('job_attempts').where({ job_id: jobId }).first('lease_expires_at')).lease_expires_at as Date;
      return now.getTime() > first.getTime();
    },
    'a heartbeat to extend the lease',
    5000,
  );
  t.true(alive(pid));
  await db('job_attempts')
    .where({ job_id: jobId })
    .update({ lease_token: db.raw('gen_random_uuid()') });
  await until(async () => !alive(pid), 'the background child to die after the lease was lost', 10_000);
  const [attempt] = await attemptsOf(w, jobId);
  const lines = await until(async () => {
    const all = await logLines(w, jobId, attempt.id);
    return all.some((l) => l.line.startsWith('stopped:')) && all;
  }, 'the stop to be logged');
  t.regex(lines.at(-1).line, /^stopped: lease lost: attempt 1 .* the lease token does not match$/);
  t.is(attempt.status, 'running', 'the attempt is left for the reaper: the worker wrote nothing under a lease it lost');
});
