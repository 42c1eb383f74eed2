import test from 'ava';
import { startPgCluster, type PgCluster } from '../support/pg-cluster.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { bootstrap, scriptJobs as createScriptJobs, settled as settledJobs, sleep, tail as tailOf, until, type Client } from '../support/chaos.ts';

/**
 * A PostgreSQL restart (fast, then immediate with the database away for a few seconds) under a
 * server running every role, with script jobs running across it: the process survives, answers
 * /health again soon after the database is back, and every job ends done with one attempt that ran
 * (the completions that failed while the database was down were retried until they landed, rather
 * than left for the lease reaper; an attempt still being prepared when the database went away is
 * given back and runs again, its script never having started). The jobs have one attempt each (no
 * hints.max_attempts): any failure the outage caused would end one cancelled. Its own cluster, never
 * the machine's PostgreSQL.
 */
let cluster: PgCluster;
let server: ServerProcess;
let client: Client;
let projectId: string;

const tail = () => tailOf(server);
const scriptJobs = (n: number, run: string) => createScriptJobs(client, projectId, n, run);
/**
 * Waits for the jobs to end: how many are done, and per job its attempts that ran, leaving out those
 * the worker gave back (status cancelled, error 'released') because the database went away while it
 * prepared them, before their script started. Any other extra attempt (reaped, failed) is a rerun.
 */
const settled = async (ids: string[]) => {
  const { done } = await settledJobs(client, projectId, ids, 60_000);
  const attempts: number[] = [];
  let givenBack = 0;
  for (const id of ids) {
    const all: { status: string; error: string | null }[] = (await client.call('GET', `/projects/${projectId}/jobs/${id}/attempts?limit=100`)).body.data;
    const released = all.filter((a) => a.status === 'cancelled' && a.error === 'released').length;
    givenBack += released;
    attempts.push(all.length - released);
  }
  return { done, attempts, givenBack };
};

/** Seconds until /health answers 200, while checking that the process stays up. */
async function healthyAgain(since: number): Promise<number> {
  await until(
    async () => {
      if (!server.running()) return true;
      return (await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(2_000) })).status === 200;
    },
    '/health to answer 200',
    30_000,
  );
  if (!server.running()) throw new Error(`the server exited (${await server.exited}): ${tail()}`);
  return (Date.now() - since) / 1000;
}

test.before(async () => {
  cluster = await startPgCluster();
  server = await startServerProcess(cluster.url, {
    SVC_ROLES: 'api,orchestrator,worker',
    SVC_WORKER__CONCURRENCY: '8',
    SVC_WORKER__HEARTBEAT_SECONDS: '1',
    SVC_WORKER__LOG_FLUSH_MS: '20',
  });
  ({ client, projectId } = await bootstrap(server.url));
});

test.after.always(async () => {
  await server?.stop();
  await cluster?.destroy();
});

test.serial('the all-roles process survives a fast PostgreSQL restart, and its running jobs complete', async (t) => {
  const ids = await scriptJobs(4, 'sleep 2; echo finished');
  await sleep(700); // claimed and running
  const at = Date.now();
  await cluster.restart('fast');
  const back = Date.now();
  const seconds = await healthyAgain(back);
  t.log(`restart took ${((back - at) / 1000).toFixed(1)} s; /health 200 again ${seconds.toFixed(1)} s after the database was back`);
  await sleep(3_000); // the reconnecting connections (LISTEN, scheduler) have time to fail the process, if they would
  t.true(server.running(), tail());
  const { done, attempts, givenBack } = await settled(ids);
  t.log(`attempts given back while the database was away (before their script started): ${givenBack}`);
  t.is(done, ids.length, tail());
  t.deepEqual(
    attempts,
    ids.map(() => 1),
    'no attempt was reaped, or failed, and run again',
  );
  t.false(server.output().includes('outside any request'), "no connection error went unhandled (the crash handler's safety net was not needed)");
});

/** Reads the job list every 50 ms until stopped, recording each status with its time. */
function probe(): { stop(): Promise<{ at: number; status: number }[]> } {
  const seen: { at: number; status: number }[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const status = await client.status('GET', `/projects/${projectId}/jobs`);
      seen.push({ at: Date.now(), status });
      await sleep(50);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return seen;
    },
  };
}

test.serial('the process survives an immediate stop with the database away for 4 s; completions made meanwhile land once it is back', async (t) => {
  const ids = await scriptJobs(4, 'sleep 1; echo finished');
  await sleep(500);
  const requests = probe();
  await cluster.stop('immediate'); // the scripts end while the database is away
  await sleep(4_000);
  t.true(server.running(), tail());
  await cluster.start();
  const backAt = Date.now();
  const seconds = await healthyAgain(backAt);
  await sleep(10_000);
  const seen = await requests.stop();
  const during = seen.filter((r) => r.at < backAt);
  const after = seen.filter((r) => r.at >= backAt);
  const count = (rs: typeof seen, f: (s: number) => boolean) => rs.filter((r) => f(r.status)).length;
  const lastFailure = after.filter((r) => r.status >= 500 || r.status === 0).at(-1);
  t.log(
    `job lists while the database was away: ${during.length} (${count(during, (s) => s === 503)} × 503, ${count(during, (s) => s === 500)} × 500); after it was back: ${after.length}, ${count(after, (s) => s >= 500)} × 5xx, the last ${lastFailure ? `${((lastFailure.at - backAt) / 1000).toFixed(1)} s after` : 'none'}`,
  );
  const serverErrors = server
    .output()
    .split('\n')
    .filter((l) => l.includes('"statusCode":500'))
    .slice(0, 3)
    .join('\n')
    .slice(0, 3_000);
  t.is(
    count(seen, (s) => s === 500 || s === 0),
    0,
    `never a 500 (or a dropped connection): 503 while the database is away\n${serverErrors}`,
  );
  t.is(
    count(
      after.filter((r) => r.at > backAt + 2_000),
      (s) => s >= 500,
    ),
    0,
    'no 5xx from 2 s after the database is back',
  );
  t.log(`/health 200 again ${seconds.toFixed(1)} s after the database was back`);
  t.true(server.running(), tail());
  const { done, attempts, givenBack } = await settled(ids);
  t.log(`attempts given back while the database was away (before their script started): ${givenBack}`);
  t.is(done, ids.length, tail());
  t.deepEqual(
    attempts,
    ids.map(() => 1),
    'no attempt was reaped, or failed, and run again',
  );
  // New work flows after the restart (the claimer and its wake-ups reconnected).
  const later = await scriptJobs(2, 'echo after');
  t.is((await settled(later)).done, 2);
  t.false(server.output().includes('outside any request'), 'no connection error went unhandled');
});
