import test from 'ava';
import pg from 'pg';
import { startPgCluster, type PgCluster } from '../support/pg-cluster.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { backends, bootstrap, sleep, tail, type Client } from '../support/chaos.ts';

/**
 * Idle server-sent-event streams cost no database connection and no query: 300 streams of a running
 * attempt's log hold as many client backends (pg_stat_activity) as 10 do (the shared pool and the one
 * shared LISTEN connection), also across a keep-alive period, and the database sees next to no transactions meanwhile (each
 * stream used to re-read its log every 15 s). An api-only process, the attempt claimed through the
 * API, so nothing else runs.
 */
const STREAMS = 300;
let cluster: PgCluster;
let server: ServerProcess;
let client: Client;
let projectId: string;

test.before(async () => {
  cluster = await startPgCluster();
  server = await startServerProcess(cluster.url, { SVC_ROLES: 'api' });
  ({ client, projectId } = await bootstrap(server.url));
});

test.after.always(async () => {
  await server?.stop();
  await cluster?.destroy();
});

/** Transactions committed in the cluster's `postgres` database so far. */
async function commits(): Promise<number> {
  const c = new pg.Client({ connectionString: cluster.url });
  await c.connect();
  try {
    await c.query('SELECT pg_stat_clear_snapshot()');
    return Number((await c.query("SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")).rows[0].xact_commit);
  } finally {
    await c.end();
  }
}

test(`${STREAMS} idle log streams hold the connections 10 do, and send no queries while idle`, async (t) => {
  const job = (await client.call('POST', `/projects/${projectId}/jobs`, { description: 'streamed' })).body;
  const attempt = (await client.call('POST', `/jobs/${job.id}/claim`, { lease_seconds: 600 })).body.attempt;
  // The process's own background work, with no stream open, over the same time.
  const quietFrom = await commits();
  await sleep(16_000);
  const quietCommits = (await commits()) - quietFrom - 1; // the reading of the count is one
  const before = await backends(cluster.url);
  const aborts = new AbortController();
  // One after another, as clients arrive: opening reads the log once, on the shared pool, which
  // would otherwise grow to its maximum for a burst of opens (connections that are then idle, and reused).
  const opened: { status: number; reader: ReadableStreamDefaultReader<Uint8Array> }[] = [];
  let few = 0;
  for (let i = 0; i < STREAMS; i++) {
    if (i === 10) {
      await sleep(500);
      few = await backends(cluster.url);
    }
    opened.push(
      await (async () => {
        const res = await fetch(`${server.url}/jobs/${job.id}/attempts/${attempt.id}/logs/stream`, {
          headers: { authorization: `Bearer ${client.token}` },
          signal: aborts.signal,
        });
        const reader = res.body!.getReader();
        await reader.read(); // ': stream open'
        return { status: res.status, reader };
      })(),
    );
  }
  t.true(
    opened.every((s) => s.status === 200),
    'every stream opened',
  );
  // Each stream reads its log once after its first comment line: on a busy machine those reads may
  // still queue on the pool. Idle starts when the database sees next to nothing for half a second.
  for (let i = 0, last = await commits(); i < 40; i++) {
    await sleep(500);
    const now = await commits();
    if (now - last <= 2) break;
    last = now;
  }
  const open = await backends(cluster.url);
  const startCommits = await commits();
  await sleep(16_000); // longer than the 15 s keep-alive
  const idleCommits = (await commits()) - startCommits - 1; // the reading of the count is one
  const during = await backends(cluster.url);
  aborts.abort();
  await Promise.all(opened.map((s) => s.reader.cancel().catch(() => undefined)));
  t.log(
    `client backends: ${before} before the streams, ${few} with 10 open, ${open} with ${STREAMS} open, ${during} after 16 s idle; transactions in 16 s: ${quietCommits} with no stream, ${idleCommits} with ${STREAMS} idle`,
  );
  // The shared pool may warm by a connection or two while streams open (each reads its log once); it never follows the number of streams.
  t.true(open - few <= 2, `streams 11 to ${STREAMS} add no connection of their own: ${few} → ${open}`);
  t.true(during <= open, `nor while idle: ${open} → ${during}`);
  // One re-read per stream per keep-alive was 2 × STREAMS more.
  t.true(
    idleCommits - quietCommits < 30,
    `idle streams send no queries: ${idleCommits} transactions in 16 s against ${quietCommits} without them\n${tail(server)}`,
  );
  t.true(server.running());
});
