import test from 'ava';
import pg from 'pg';
import { startPgCluster, type PgCluster } from '../support/pg-cluster.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { type Client, bootstrap, sleep, tail } from '../support/chaos.ts';

/**
 * A 20 s ACCESS EXCLUSIVE lock on `jobs` (a migration gone wrong, a stuck maintenance session)
 * while clients keep listing jobs (12 at a time, more than the pool's 10 connections), reading their
 * org and probing /health: no 500 and no dropped connection (503 with Retry-After while the table is
 * stalled), /health answering throughout, and every org read, which does not touch `jobs`, served.
 */
let cluster: PgCluster;
let server: ServerProcess;
let client: Client;
let orgId: string;
let projectId: string;

test.before(async () => {
  cluster = await startPgCluster();
  server = await startServerProcess(cluster.url, { SVC_ROLES: 'api,orchestrator,worker' });
  ({ client, orgId, projectId } = await bootstrap(server.url));
});

test.after.always(async () => {
  await server?.stop();
  await cluster?.destroy();
});

test('a 20 s lock on jobs: 0 × 500, /health and an unrelated route served', async (t) => {
  const locker = new pg.Client({ connectionString: cluster.url });
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE');
  const lockedAt = Date.now();
  const seen: { route: string; status: number; ms: number }[] = [];
  let running = true;
  const loop = async (route: string, path: string, every: number) => {
    while (running) {
      const at = Date.now();
      const status = await client.status('GET', path, undefined, 30_000);
      seen.push({ route, status, ms: Date.now() - at });
      await sleep(every);
    }
  };
  const loops = [
    ...Array.from({ length: 12 }, () => loop('jobs', `/projects/${projectId}/jobs`, 200)),
    loop('org', `/orgs/${orgId}`, 500),
    loop('health', '/health', 1_000),
  ];
  await sleep(20_000);
  await locker.query('COMMIT');
  await locker.end();
  const releasedAt = Date.now();
  await sleep(3_000);
  running = false;
  await Promise.all(loops);
  const of = (route: string) => seen.filter((s) => s.route === route);
  const count = (route: string, f: (s: number) => boolean) => of(route).filter((s) => f(s.status)).length;
  for (const route of ['jobs', 'org', 'health'])
    t.log(
      `${route}: ${of(route).length} requests, ${count(route, (s) => s === 200)} × 200, ${count(route, (s) => s === 503)} × 503, ${count(route, (s) => s === 500 || s === 0)} × 500 or dropped; slowest ${Math.max(...of(route).map((s) => s.ms))} ms`,
    );
  t.log(`lock held ${((releasedAt - lockedAt) / 1000).toFixed(1)} s`);
  t.is(seen.filter((s) => s.status === 500 || s.status === 0).length, 0, tail(server));
  t.is(
    count('health', (s) => s !== 200),
    0,
    '/health answers 200 throughout',
  );
  t.true(count('org', (s) => s === 200) >= 3, 'the org read is served while jobs is locked');
  t.is(
    count('org', (s) => s !== 200),
    0,
    "every org read is served: the job lists (more than the pool) hold only their route's share of it",
  );
  t.true(server.running());
});
