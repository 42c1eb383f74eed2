import test from 'ava';
import { CoordinationThreadsToken, type CoordinationThreads } from '../../core/ports/threads.ts';
import { attemptsOf, finished, logLines, scriptJob, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * The database going away while an attempt is being prepared is not the job failing: the worker gives
 * the job back and it runs once the database answers again, instead of spending one of its attempts
 * (a job without hints.max_attempts has one, so it used to end cancelled).
 */
let w: WorkerWorld;
test.before(async () => {
  w = await workerWorld('wdbaway');
});
test.after.always(() => w?.stop());

/** What the pg driver throws when PostgreSQL stops under a query (`pg_ctl stop -m immediate`). */
function terminated(): Error {
  return Object.assign(new Error('terminating connection due to immediate shutdown command'), { code: '57P01' });
}

test.serial('a provisioning read that meets a database outage gives the job back; it runs again and ends done', async (t) => {
  const { container } = w.srv.kernel;
  const real = container.resolve(CoordinationThreadsToken);
  let outages = 1;
  const flaky: CoordinationThreads = {
    inbox: (job) => (outages-- > 0 ? Promise.reject(terminated()) : real.inbox(job)),
  };
  container.register(CoordinationThreadsToken, { useValue: flaky });
  try {
    const jobId = await scriptJob(w, 'echo ran');
    const job = await finished(w, jobId);
    const attempts = await attemptsOf(w, jobId);
    t.is(job.phase, 'done', `close_reason: ${job.close_reason}`);
    t.is(outages, -1, 'the inbox was read again by the second attempt');
    t.deepEqual(
      attempts.map((a) => [a.attempt_number, a.status, a.error]).sort((a, b) => a[0] - b[0]),
      [
        [1, 'cancelled', 'released'],
        [2, 'succeeded', null],
      ],
    );
    const first = attempts.find((a) => a.attempt_number === 1);
    const lines = (await logLines(w, jobId, first.id)).map((l) => l.line);
    t.true(
      lines.some((l) => l.startsWith('stopped: the database is unreachable')),
      lines.join('\n'),
    );
  } finally {
    container.register(CoordinationThreadsToken, { useValue: real });
  }
});
