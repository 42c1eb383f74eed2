import test from 'ava';
import pg from 'pg';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

/**
 * One stalled table must not starve the pool: with an exclusive lock held on `jobs` for 12 s (longer
 * than a request waits for a connection), 30 job lists and an unrelated org read in flight, nothing
 * answers 500. Lists blocked by the lock answer 503 with Retry-After once the lock timeout frees their
 * connection (or their route's share of the pool stays taken for as long as a request waits for a
 * connection), the org read is served at once from the rest of the pool, and /health (a pool of its
 * own) answers 200 throughout.
 */
let s: TestServer;
let admin: ReturnType<typeof as>;
let orgId = '';
let projectId = '';

test.before(async () => {
  s = await startTestServer();
  admin = as(s.server, (await bootstrapAdmin(s.server)).token);
  orgId = (await admin.post('/orgs', { name: 'Stall' })).body.id;
  projectId = (await admin.post('/projects', { org_id: orgId, name: 'Stall', slug: 'stall' })).body.id;
  await admin.post(`/projects/${projectId}/jobs`, { description: 'one job' });
});
test.after.always(async () => {
  await s?.stop();
});

test('a 12 s exclusive lock on jobs: no 500, blocked lists 503 + Retry-After, an unrelated read served, /health 200', async (t) => {
  const locker = new pg.Client({ connectionString: s.kernel.databaseUrl });
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE');
  const released = new Promise<void>((resolve) =>
    setTimeout(async () => {
      await locker.query('COMMIT');
      await locker.end();
      resolve();
    }, 12_000),
  );
  try {
    const started = Date.now();
    const lists = Array.from({ length: 30 }, () => admin.get(`/projects/${projectId}/jobs`));
    await new Promise((r) => setTimeout(r, 200));
    const asked = Date.now();
    const org = admin.get(`/orgs/${orgId}`).then((res) => ({ ...res, ms: Date.now() - started, waited: Date.now() - asked }));
    const health: number[] = [];
    const healthMs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now();
      health.push((await admin.get('/health')).statusCode);
      healthMs.push(Date.now() - t0);
      await new Promise((r) => setTimeout(r, 1_000));
    }
    const listed = await Promise.all(lists);
    const orgRead = await org;
    const statuses = listed.map((r) => r.statusCode);
    t.log(
      `lists: ${statuses.filter((c) => c === 200).length} × 200, ${statuses.filter((c) => c === 503).length} × 503; org read ${orgRead.statusCode} after ${orgRead.ms} ms; /health ${health.join(',')} in ${healthMs.join(',')} ms`,
    );
    t.deepEqual(
      statuses.filter((c) => c !== 200 && c !== 503),
      [],
      'every list answers 200 or 503',
    );
    for (const r of listed.filter((x) => x.statusCode === 503)) {
      t.is(r.headers['retry-after'], '2');
      t.regex(r.body.message, /database is busy or unreachable/);
    }
    t.true(statuses.includes(503), 'lists blocked by the lock are answered 503 before it is released');
    t.is(orgRead.statusCode, 200, JSON.stringify(orgRead.body));
    t.true(orgRead.waited < 2_000, `the org read is served at once, not once a blocked list gives its connection back (${orgRead.waited} ms)`);
    t.deepEqual(health, [200, 200, 200, 200, 200]);
  } finally {
    await released;
  }
  t.is((await admin.get(`/projects/${projectId}/jobs`)).statusCode, 200, 'served again once the lock is gone');
});
