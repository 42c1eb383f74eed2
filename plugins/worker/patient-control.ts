import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { AttemptControl } from '../../core/ports/attempts.ts';
import { Backoff } from '../../core/db/backoff.ts';
import { isDatabaseUnavailable } from '../../core/db/unavailable.ts';

/**
 * The attempt's writes, retried while the database is unreachable (a restart, a cut) until they
 * land, so an attempt that finished its work while the database was away still records its result
 * instead of waiting for the lease reaper to run it again. Retries back off from 250 ms to 5 s and
 * stop when `signal` aborts (the attempt was stopped). Other errors (LeaseLost, a refused statement)
 * pass at once. Heartbeats are not retried here: the next beat is their retry. A release when the
 * attempt is stopped (the signal already aborted) is tried once.
 */
export function patientControl(control: AttemptControl, signal: AbortSignal, logger: Logger, jobId: string): AttemptControl {
  const patient =
    <A extends unknown[], R>(what: string, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const backoff = new Backoff(250, 5_000);
      for (;;) {
        try {
          return await fn(...args);
        } catch (err) {
          if (!isDatabaseUnavailable(err) || signal.aborted) throw err;
          if (backoff.failures === 0) logger.warn({ err: (err as Error).message, jobId, what }, 'the database is unreachable; retrying until the write lands');
          const delay = backoff.next();
          backoff.failed();
          await sleep(delay, undefined, { signal }).catch(() => undefined);
          if (signal.aborted) throw err;
        }
      }
    };
  return {
    load: patient('load', control.load.bind(control)),
    heartbeat: control.heartbeat.bind(control),
    complete: patient('complete', control.complete.bind(control)),
    release: patient('release', control.release.bind(control)),
    recordUsage: patient('usage', control.recordUsage.bind(control)),
    recordPhases: patient('phases', control.recordPhases.bind(control)),
    recordDiff: patient('diff', control.recordDiff.bind(control)),
    appendLogs: patient('logs', control.appendLogs.bind(control)),
    runnerEvent: patient('runner event', control.runnerEvent.bind(control)),
    systemEvent: patient('system event', control.systemEvent.bind(control)),
  };
}
