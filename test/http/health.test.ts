import test from 'ava';
import pg from 'pg';
import { createTestDatabase } from '../support/database.ts';
import { call, startTestServer } from '../support/server.ts';

/** Refuses new connections to the test database and ends the open ones: the database is "down". */
async function setConnections(serverUrl: string, database: string, allowed: boolean): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS ${allowed}`);
  if (!allowed) await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
  await admin.end();
}

test('GET /health answers 503 while the database is unreachable, and 200 again once it is back', async (t) => {
  if (!process.env.DATABASE_URL) return t.pass('needs DATABASE_URL: an embedded database cannot be taken away from under the server here');
  const database = await createTestDatabase();
  const name = new URL(database.url).pathname.slice(1);
  const s = await startTestServer({ database });
  try {
    const up = await call(s.server, 'GET', '/health');
    t.is(up.statusCode, 200);
    t.like(up.body, { status: 'ok', database: { ok: true } });

    await setConnections(process.env.DATABASE_URL, name, false);
    const down = await call(s.server, 'GET', '/health');
    t.is(down.statusCode, 503);
    t.like(down.body, { status: 'unavailable', database: { ok: false, latency_ms: null } });

    await setConnections(process.env.DATABASE_URL, name, true);
    let again = await call(s.server, 'GET', '/health');
    for (let i = 0; i < 20 && again.statusCode !== 200; i++) again = await call(s.server, 'GET', '/health');
    t.is(again.statusCode, 200);
  } finally {
    await s.stop();
    await database.drop();
  }
});
