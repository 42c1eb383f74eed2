import test from 'ava';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../core/db/embedded.ts';
import { createTestDatabase } from '../support/database.ts';
import { call, startTestServer } from '../support/server.ts';
import { ROOT, accepts, serveProcess, waitForHealth } from '../support/serve-process.ts';
import { RuntimeToken } from '../../core/ports/runtime.ts';

const FIXTURE_PLUGIN = fileURLToPath(new URL('../fixtures/plugins/undeclared-access.ts', import.meta.url));

test.serial('npm start: embedded PostgreSQL, all roles, data kept across restarts, SIGTERM stops everything', async (t) => {
  t.timeout(240_000);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-start-'));
  chmodSync(dataDir, 0o755); // as root, the embedded PostgreSQL runs as the postgres user and must enter it
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  try {
    const first = serveProcess({ PORT: String(port), SVC_DATA_DIR: dataDir });
    const health = await waitForHealth(url, first);
    t.deepEqual(health.roles, ['api', 'orchestrator', 'worker']);
    t.true(health.database.ok);
    const boot = await fetch(`${url}/auth/bootstrap`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'first@example.com' }),
    });
    t.is(boot.status, 201);
    const pgPort = Number(readFileSync(path.join(dataDir, 'postgres.port'), 'utf8'));
    t.true(await accepts(pgPort));

    first.child.kill('SIGTERM');
    t.is(await first.exited, 0, first.output());
    t.false(await accepts(pgPort), 'the embedded PostgreSQL stops with the server');

    // A new port: the old one may have been handed to another test meanwhile.
    const secondUrl = `http://127.0.0.1:${await freePort()}`;
    const second = serveProcess({ PORT: new URL(secondUrl).port, SVC_DATA_DIR: dataDir });
    await waitForHealth(secondUrl, second);
    const status = await (await fetch(`${secondUrl}/auth/bootstrap/status`)).json();
    t.true(status.completed, 'the admin created before the restart is still there');
    second.child.kill('SIGTERM');
    t.is(await second.exited, 0, second.output());
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('`svc serve --roles api --port N` runs only the api role on the given port', async (t) => {
  const database = await createTestDatabase();
  const port = await freePort();
  const proc = serveProcess(
    { DATABASE_URL: database.url, SVC_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'svc-roles-')) },
    { command: ['dist/cli/bin.js', 'serve', '--roles', 'api', '--port', String(port)] },
  );
  try {
    const health = await waitForHealth(`http://127.0.0.1:${port}`, proc);
    t.deepEqual(health.roles, ['api']);
    proc.child.kill('SIGTERM');
    t.is(await proc.exited, 0, proc.output());
  } finally {
    proc.child.kill('SIGKILL');
    await database.drop();
  }
});

test('an invalid setting stops the start with its path and reason', async (t) => {
  const proc = serveProcess({ PORT: 'abc', DATABASE_URL: 'postgres://unused@127.0.0.1:1/x' });
  t.is(await proc.exited, 78);
  t.regex(proc.output(), /server\.port: "server\.port" must be a number \(from PORT\)/);
});

test('replicas starting together on one database migrate once', async (t) => {
  const database = await createTestDatabase({ empty: true });
  const started = await Promise.allSettled([startTestServer({ database }), startTestServer({ database })]);
  try {
    const [a, b] = started.map((r) => (r.status === 'fulfilled' ? r.value : (t.fail(String(r.reason)) as never)));
    const rows = await a.kernel.db('knex_migrations').select('name');
    const files = readdirSync(path.join(ROOT, 'migrations'))
      .filter((f) => f.endsWith('.ts'))
      .sort();
    t.deepEqual(
      rows.map((r) => r.name),
      files,
      'each migration applied exactly once',
    );
    t.is((await a.kernel.db('signing_keys').where({ active: true })).length, 1, 'one signing key for all replicas');
    t.is((await call(b.server, 'GET', '/health')).statusCode, 200);
  } finally {
    for (const r of started) if (r.status === 'fulfilled') await r.value.stop();
    await database.drop();
  }
});

test('the config decides which domain plugins load', async (t) => {
  const s = await startTestServer({ overrides: { plugins: ['discovery', 'auth', 'orgs'] } });
  try {
    t.is((await call(s.server, 'GET', '/orgs')).statusCode, 401);
    t.is((await call(s.server, 'GET', '/projects')).statusCode, 404);
  } finally {
    await s.stop();
  }
});

test('a plugin whose dependency is left out fails the boot by name', async (t) => {
  const err = await t.throwsAsync(startTestServer({ overrides: { plugins: ['discovery', 'auth', 'projects'] } }));
  t.regex(err!.message, /orgs/);
});

test('an unknown plugin fails the boot by name', async (t) => {
  const err = await t.throwsAsync(startTestServer({ overrides: { plugins: ['discovery', 'no-such-domain'] } }));
  t.regex(err!.message, /plugin 'no-such-domain' could not be loaded/);
});

test('a route that declares no access fails the boot', async (t) => {
  const err = await t.throwsAsync(startTestServer({ overrides: { plugins: ['discovery', FIXTURE_PLUGIN] } }));
  t.regex(err!.message, /route GET \/oops declares no access/);
});

test('adapters: an unknown port or adapter name fails the boot with its config path', async (t) => {
  const unknownPort = await t.throwsAsync(startTestServer({ overrides: { adapters: { teleporter: { use: 'x' } } } }));
  t.regex(unknownPort!.message, /adapters\.teleporter: unknown port/);
  const unknownAdapter = await t.throwsAsync(
    startTestServer({ overrides: { roles: ['api', 'orchestrator'], adapters: { scheduler: { use: 'no-such-scheduler' } } } }),
  );
  t.regex(unknownAdapter!.message, /adapters\.scheduler\.use: 'no-such-scheduler' is neither a built-in scheduler adapter/);
});

test('errors keep the {statusCode, error, message} shape', async (t) => {
  const s = await startTestServer();
  try {
    const malformed = await s.server.inject({ method: 'POST', url: '/auth/challenge', payload: '{"email":', headers: { 'content-type': 'application/json' } });
    t.is(malformed.statusCode, 400);
    t.deepEqual(Object.keys(JSON.parse(malformed.payload)).sort(), ['error', 'message', 'statusCode']);
    const unknown = await call(s.server, 'GET', '/no/such/route');
    t.is(unknown.statusCode, 404);
    t.is(unknown.body.error, 'Not Found');
    t.truthy(unknown.headers['x-request-id']);
  } finally {
    await s.stop();
  }
});

test("the worker role's runtime is built by the kernel from adapters.runtime, like every other adapter", async (t) => {
  const s = await startTestServer({ overrides: { roles: ['api', 'worker'], plugins: ['discovery'] } });
  try {
    t.true(s.kernel.container.isRegistered(RuntimeToken, true));
    t.is(typeof s.kernel.container.resolve(RuntimeToken).start, 'function');
  } finally {
    await s.stop();
  }
  const bad = await t.throwsAsync(
    startTestServer({ overrides: { roles: ['api', 'worker'], plugins: ['discovery'], adapters: { runtime: { use: 'no-such-runtime' } } } }),
  );
  t.regex(bad!.message, /adapters\.runtime\.use: 'no-such-runtime' is neither a built-in runtime adapter/);
});
