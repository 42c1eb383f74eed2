import test from 'ava';
import { startPgCluster, type PgCluster } from '../support/pg-cluster.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';

/**
 * A PostgreSQL restart (fast, then immediate with the database away for a few seconds) under a
 * server running every role, with script jobs running across it: the process survives, answers
 * /health again soon after the database is back, and every job ends done with one attempt (the
 * completions that failed while the database was down were retried until they landed, rather than
 * left for the lease reaper). Its own cluster, never the machine's PostgreSQL.
 */
let cluster: PgCluster;
let server: ServerProcess;
let token: string;
let projectId: string;

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(15_000),
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
};

/** The end of the server's output, for failure messages. */
const tail = () => server.output().slice(-4_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(check: () => Promise<T | null | undefined | false>, what: string, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check().catch(() => null);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(100);
  }
}

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

async function scriptJobs(n: number, run: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await api('POST', `/projects/${projectId}/jobs`, { description: `restart ${i}`, hints: { step: { kind: 'script', script: { run } } } });
    if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
    ids.push(res.body.id);
  }
  return ids;
}

async function settled(ids: string[]): Promise<{ done: number; attempts: number[] }> {
  const jobs = await until(
    async () => {
      const all = await Promise.all(ids.map(async (id) => (await api('GET', `/jobs/${id}`)).body));
      return all.every((j) => j?.phase === 'done' || j?.phase === 'cancelled') ? all : null;
    },
    'every job to finish',
    60_000,
  );
  const attempts = await Promise.all(
    ids.map(async (id) => (await api('GET', `/projects/${projectId}/jobs/${id}/attempts?limit=100`)).body.data.length as number),
  );
  return { done: jobs.filter((j) => j.phase === 'done').length, attempts };
}

test.before(async () => {
  cluster = await startPgCluster();
  server = await startServerProcess(cluster.url, {
    SVC_ROLES: 'api,orchestrator,worker',
    SVC_WORKER__CONCURRENCY: '8',
    SVC_WORKER__HEARTBEAT_SECONDS: '1',
    SVC_WORKER__LOG_FLUSH_MS: '20',
  });
  const boot = await fetch(`${server.url}/auth/bootstrap`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'chaos@example.com' }),
  });
  token = ((await boot.json()) as any).access_token;
  const org = await api('POST', '/orgs', { name: 'Chaos' });
  const project = await api('POST', '/projects', { org_id: org.body.id, name: 'restart', slug: 'restart' });
  projectId = project.body.id;
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
  const { done, attempts } = await settled(ids);
  t.is(done, ids.length, tail());
  t.deepEqual(
    attempts,
    ids.map(() => 1),
    'no attempt was reaped and run again',
  );
  t.false(server.output().includes('outside any request'), "no connection error went unhandled (the crash handler's safety net was not needed)");
});

/** Reads the job list every 50 ms until stopped, recording each status with its time. */
function probe(): { stop(): Promise<{ at: number; status: number }[]> } {
  const seen: { at: number; status: number }[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const status = await api('GET', `/projects/${projectId}/jobs`).then(
        (r) => r.status,
        () => 0,
      );
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
  const { done, attempts } = await settled(ids);
  t.is(done, ids.length, tail());
  t.deepEqual(
    attempts,
    ids.map(() => 1),
    'no attempt was reaped and run again',
  );
  // New work flows after the restart (the claimer and its wake-ups reconnected).
  const later = await scriptJobs(2, 'echo after');
  t.is((await settled(later)).done, 2);
  t.false(server.output().includes('outside any request'), 'no connection error went unhandled');
});
