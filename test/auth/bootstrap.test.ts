// Bootstrap of the first administrator, mode by mode as the spec's table has it
// (auto-open, recovery, secure, production/closed), through POST /auth/bootstrap and its status route.
import test from 'ava';
import { chownSync, existsSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { as, call, startTestServer, type TestServer } from '../support/server.ts';
import { Bootstrap } from '../../plugins/auth/bootstrap.ts';
import { MINUTE, DAY, authRows, makeKey, tempDir, within, type SshKey } from './helpers.ts';

const servers: TestServer[] = [];
const cleanups: (() => Promise<void>)[] = [];

async function server(opts: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const s = await startTestServer(opts);
  servers.push(s);
  return s;
}

let keyDir = '';
let key: SshKey;

test.before(async () => {
  const tmp = await tempDir();
  cleanups.push(tmp.cleanup);
  keyDir = tmp.dir;
  key = await makeKey(keyDir, 'admin', 'ed25519');
});

test.after.always(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  for (const c of cleanups) await c();
});

const NO_ROWS_AFTER_BOOT = { users: 0, user_keys: 0, org_members: 0, project_members: 0, signing_keys: 1, admins: 0 };

test('auto-open: status, first admin, token works, second bootstrap 409, then closed', async (t) => {
  const before = Date.now();
  const s = await server();
  const after = Date.now();
  const anon = as(s.server);

  const status = await anon.get('/auth/bootstrap/status');
  t.is(status.statusCode, 200);
  t.like(status.body, { completed: false, window_open: true, mode: 'auto-open', requires_token: false });
  within(t, status.body.window_closes_at, before + 10 * MINUTE, after + 10 * MINUTE);

  const t0 = Date.now();
  const res = await anon.post('/auth/bootstrap', { email: 'First.Admin@Example.com', display_name: 'First' });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.is(res.body.token_type, 'Bearer');
  t.is(typeof res.body.access_token, 'string');
  within(t, res.body.expires_at, t0 + DAY, Date.now() + DAY);
  t.like(res.body.user, { email: 'first.admin@example.com', display_name: 'First', is_admin: true });
  t.regex(res.body.user.id, /^usr_/);

  const me = await as(s.server, res.body.access_token).get('/auth/me');
  t.is(me.statusCode, 200);
  t.like(me.body.user, { id: res.body.user.id, email: 'first.admin@example.com', is_admin: true });
  t.deepEqual(me.body.token, { expires_at: res.body.expires_at, scope: null, role: null });

  const again = await anon.post('/auth/bootstrap', { email: 'second@example.com' });
  t.is(again.statusCode, 409);
  t.is(again.body.message, 'bootstrap is already completed: an administrator exists');
  t.is(again.body.error, 'Conflict');
  t.like(await authRows(s.kernel), { users: 1, admins: 1 });
  t.falsy(await s.kernel.db('users').where({ email: 'second@example.com' }).first());

  const same = await anon.post('/auth/bootstrap', { email: 'first.admin@example.com' });
  t.is(same.statusCode, 409, 'bootstrapping the same e-mail again is no way to get a fresh admin token');

  const closed = await anon.get('/auth/bootstrap/status');
  t.deepEqual(closed.body, { completed: true, window_open: false, window_closes_at: null, requires_token: false, mode: 'auto-open' });
});

test('auto-open window expired: status closed and POST 403 naming the trigger file; nothing written', async (t) => {
  const tmp = await tempDir();
  cleanups.push(tmp.cleanup);
  const trigger = path.join(tmp.dir, 'bootstrap-enable');
  const s = await server({ overrides: { auth: { bootstrap_window_minutes: 0, bootstrap_trigger_file: trigger } } });
  const anon = as(s.server);

  const status = await anon.get('/auth/bootstrap/status');
  t.like(status.body, { completed: false, window_open: false, mode: 'auto-open', requires_token: false });

  const res = await anon.post('/auth/bootstrap', { email: 'late@example.com' });
  t.is(res.statusCode, 403);
  t.is(res.body.error, 'Forbidden');
  t.true(res.body.message.includes(trigger), res.body.message);
  t.regex(res.body.message, /bootstrap window is closed/);
  t.deepEqual(await authRows(s.kernel), NO_ROWS_AFTER_BOOT);
});

test('recovery: the trigger file opens a 10-minute window for another admin, and is deleted on success', async (t) => {
  const s = await server();
  const anon = as(s.server);
  const first = await anon.post('/auth/bootstrap', { email: 'admin@example.com' });
  t.is(first.statusCode, 201);
  t.is((await anon.get('/auth/bootstrap/status')).body.window_open, false);

  writeFileSync(s.triggerFile, '');
  const status = await anon.get('/auth/bootstrap/status');
  t.like(status.body, { completed: true, window_open: true, mode: 'recovery', requires_token: false });
  within(t, status.body.window_closes_at, Date.now() + 10 * MINUTE - 5_000, Date.now() + 10 * MINUTE);

  const res = await anon.post('/auth/bootstrap', { email: 'rescuer@example.com' });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.like(res.body.user, { email: 'rescuer@example.com', is_admin: true });
  t.is((await as(s.server, res.body.access_token).get('/auth/me')).statusCode, 200);
  t.false(existsSync(s.triggerFile), 'the trigger file is deleted after a successful recovery');
  t.like(await authRows(s.kernel), { users: 2, admins: 2 });
  t.is((await as(s.server, first.body.access_token).get('/auth/me')).statusCode, 200, 'the first admin keeps working');

  const closed = await anon.get('/auth/bootstrap/status');
  t.like(closed.body, { completed: true, window_open: false, mode: 'auto-open' });
  const again = await anon.post('/auth/bootstrap', { email: 'third@example.com' });
  t.is(again.statusCode, 409);
  t.like(await authRows(s.kernel), { users: 2, admins: 2 });
});

test('recovery: a trigger file older than the window does not open it (403 naming the file)', async (t) => {
  const s = await server();
  t.is((await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' })).statusCode, 201);
  writeFileSync(s.triggerFile, '');
  const old = new Date(Date.now() - 11 * MINUTE);
  utimesSync(s.triggerFile, old, old);

  const status = await call(s.server, 'GET', '/auth/bootstrap/status');
  t.like(status.body, { completed: true, window_open: false, mode: 'recovery' });
  within(t, status.body.window_closes_at, old.getTime() + 10 * MINUTE, old.getTime() + 10 * MINUTE);

  const rows = await authRows(s.kernel);
  const res = await call(s.server, 'POST', '/auth/bootstrap', { email: 'late@example.com' });
  t.is(res.statusCode, 403);
  t.true(res.body.message.includes(s.triggerFile), res.body.message);
  t.deepEqual(await authRows(s.kernel), rows);
  t.true(existsSync(s.triggerFile), 'a refused bootstrap leaves the file alone');

  // Touching the file (a fresh mtime) reopens it.
  const now = new Date();
  utimesSync(s.triggerFile, now, now);
  const reopened = await call(s.server, 'POST', '/auth/bootstrap', { email: 'late@example.com' });
  t.is(reopened.statusCode, 201);
});

test('recovery: an existing non-admin account can be promoted by its e-mail', async (t) => {
  const s = await server();
  const admin = await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' });
  const org = await as(s.server, admin.body.access_token).post('/orgs', { name: 'Acme' });
  t.is(org.statusCode, 201);
  t.is((await as(s.server, admin.body.access_token).post(`/orgs/${org.body.id}/members`, { email: 'bob@example.com' })).statusCode, 201);
  writeFileSync(s.triggerFile, '');
  const res = await call(s.server, 'POST', '/auth/bootstrap', { email: 'BOB@example.com' });
  t.is(res.statusCode, 201);
  t.like(res.body.user, { email: 'bob@example.com', is_admin: true });
  t.like(await authRows(s.kernel), { users: 2, admins: 2 });
});

test('recovery: parallel bootstraps through one trigger file create exactly one admin', async (t) => {
  const s = await server();
  t.is((await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' })).statusCode, 201);
  writeFileSync(s.triggerFile, '');
  const results = await Promise.all([0, 1, 2, 3, 4].map((i) => call(s.server, 'POST', '/auth/bootstrap', { email: `rescuer${i}@example.com` })));
  const codes = results.map((r) => r.statusCode).sort();
  t.deepEqual(codes, [201, 409, 409, 409, 409], JSON.stringify(results.map((r) => r.body)));
  t.like(await authRows(s.kernel), { users: 2, admins: 2 });
  t.false(existsSync(s.triggerFile));
});

test('recovery: a trigger file that is a symlink, or owned by another user, is ignored', async (t) => {
  const s = await server();
  t.is((await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' })).statusCode, 201);
  const rows = await authRows(s.kernel);

  const target = path.join(s.dataDir, 'some-file');
  writeFileSync(target, '');
  symlinkSync(target, s.triggerFile);
  t.like((await call(s.server, 'GET', '/auth/bootstrap/status')).body, { window_open: false, mode: 'auto-open' });
  t.is((await call(s.server, 'POST', '/auth/bootstrap', { email: 'intruder@example.com' })).statusCode, 409);

  if (typeof process.getuid === 'function' && process.getuid() === 0) {
    // Only root can give a file away; the server runs as root here, so a file of uid 65534 is foreign.
    rmSync(s.triggerFile);
    writeFileSync(s.triggerFile, '');
    chownSync(s.triggerFile, 65534, 65534);
    t.like((await call(s.server, 'GET', '/auth/bootstrap/status')).body, { window_open: false, mode: 'auto-open' });
    t.is((await call(s.server, 'POST', '/auth/bootstrap', { email: 'intruder@example.com' })).statusCode, 409);
  } else {
    t.log('not root: the foreign-owner case was not run');
  }
  t.deepEqual(await authRows(s.kernel), rows);
});

test('secure: SVC_BOOTSTRAP_TOKEN is required; missing or wrong token 401 and nothing written', async (t) => {
  const s = await server({ env: { SVC_BOOTSTRAP_TOKEN: 'correct-horse-battery-staple' } });
  const anon = as(s.server);
  t.deepEqual((await anon.get('/auth/bootstrap/status')).body, {
    completed: false,
    window_open: true,
    window_closes_at: null,
    requires_token: true,
    mode: 'secure',
  });

  const missing = await anon.post('/auth/bootstrap', { email: 'admin@example.com' });
  t.is(missing.statusCode, 401);
  t.is(missing.body.message, 'this server requires the bootstrap token (SVC_BOOTSTRAP_TOKEN)');
  const wrong = await anon.post('/auth/bootstrap', { email: 'admin@example.com', token: 'correct-horse-battery-stapler' });
  t.is(wrong.statusCode, 401);
  t.is(wrong.body.message, 'invalid bootstrap token');
  const empty = await anon.post('/auth/bootstrap', { email: 'admin@example.com', token: '' });
  t.is(empty.statusCode, 400);
  t.regex(empty.body.message, /"token" is not allowed to be empty/);
  t.deepEqual(await authRows(s.kernel), NO_ROWS_AFTER_BOOT);

  const ok = await anon.post('/auth/bootstrap', { email: 'admin@example.com', token: 'correct-horse-battery-staple' });
  t.is(ok.statusCode, 201);
  t.true(ok.body.user.is_admin);
  t.is((await as(s.server, ok.body.access_token).get('/auth/me')).statusCode, 200);
  t.like((await anon.get('/auth/bootstrap/status')).body, { completed: true, window_open: false, mode: 'secure', requires_token: true });
  const again = await anon.post('/auth/bootstrap', { email: 'other@example.com', token: 'correct-horse-battery-staple' });
  t.is(again.statusCode, 409);
  t.like(await authRows(s.kernel), { users: 1, admins: 1 });
});

test('production without a token: closed entirely (403), even with a trigger file', async (t) => {
  const s = await server({ env: { NODE_ENV: 'production' } });
  const anon = as(s.server);
  t.deepEqual((await anon.get('/auth/bootstrap/status')).body, {
    completed: false,
    window_open: false,
    window_closes_at: null,
    requires_token: true,
    mode: 'closed',
  });
  const res = await anon.post('/auth/bootstrap', { email: 'admin@example.com' });
  t.is(res.statusCode, 403);
  t.is(res.body.message, 'bootstrap is closed: NODE_ENV=production requires SVC_BOOTSTRAP_TOKEN');

  writeFileSync(s.triggerFile, '');
  t.like((await anon.get('/auth/bootstrap/status')).body, { window_open: false, mode: 'closed' });
  const withFile = await anon.post('/auth/bootstrap', { email: 'admin@example.com', token: 'anything-at-all' });
  t.is(withFile.statusCode, 403);
  t.deepEqual(await authRows(s.kernel), NO_ROWS_AFTER_BOOT);
});

test('production with a token: secure mode works', async (t) => {
  const s = await server({ env: { NODE_ENV: 'production', SVC_BOOTSTRAP_TOKEN: 'prod-bootstrap-secret' } });
  const anon = as(s.server);
  t.like((await anon.get('/auth/bootstrap/status')).body, { window_open: true, requires_token: true, mode: 'secure' });
  const missing = await anon.post('/auth/bootstrap', { email: 'admin@example.com' });
  t.is(missing.statusCode, 401);
  t.deepEqual(await authRows(s.kernel), NO_ROWS_AFTER_BOOT);
  const ok = await anon.post('/auth/bootstrap', { email: 'admin@example.com', token: 'prod-bootstrap-secret' });
  t.is(ok.statusCode, 201);
  t.true(ok.body.user.is_admin);
});

test('bad input is 400 and writes nothing; a valid public_key is registered', async (t) => {
  const s = await server();
  const anon = as(s.server);

  const badEmail = await anon.post('/auth/bootstrap', { email: 'not-an-email' });
  t.is(badEmail.statusCode, 400);
  t.is(badEmail.body.error, 'Bad Request');
  t.regex(badEmail.body.message, /"email" must be a valid email/);
  const noEmail = await anon.post('/auth/bootstrap', {});
  t.is(noEmail.statusCode, 400);
  t.regex(noEmail.body.message, /"email" is required/);
  const unknown = await anon.post('/auth/bootstrap', { email: 'admin@example.com', is_admin: false });
  t.is(unknown.statusCode, 400);
  t.regex(unknown.body.message, /"is_admin" is not allowed/);

  for (const [publicKey, message] of [
    ['ssh-ed25519 not-base64!', /"public_key" Public key is not valid base64/],
    ['garbage', /"public_key" Public key must look like/],
    ['ssh-dss AAAAB3NzaC1kc3MAAACBAP', /"public_key" Unsupported SSH key type "ssh-dss"/],
    [key.publicLine.replace('ssh-ed25519', 'ssh-rsa'), /"public_key" Public key type does not match its encoded data/],
  ] as const) {
    const res = await anon.post('/auth/bootstrap', { email: 'admin@example.com', public_key: publicKey });
    t.is(res.statusCode, 400, publicKey);
    t.regex(res.body.message, message);
  }
  t.deepEqual(await authRows(s.kernel), NO_ROWS_AFTER_BOOT, 'no user, no key after rejected bootstraps');
  t.like((await anon.get('/auth/bootstrap/status')).body, { completed: false, window_open: true });

  const ok = await anon.post('/auth/bootstrap', { email: 'admin@example.com', public_key: key.publicLine });
  t.is(ok.statusCode, 201);
  const keys = await as(s.server, ok.body.access_token).get('/auth/keys');
  t.is(keys.statusCode, 200);
  t.is(keys.body.data.length, 1);
  t.like(keys.body.data[0], { type: 'ssh-ed25519', fingerprint: key.fingerprint, label: 'bootstrap' });
  t.like(keys.body.pagination, { count: 1, total: 1, has_more: false });
});

test('a public_key that belongs to someone else fails the whole bootstrap (409, no admin)', async (t) => {
  const s = await server();
  const tmp = await tempDir();
  cleanups.push(tmp.cleanup);
  const other = await makeKey(tmp.dir, 'other', 'ed25519');
  // Someone else's account holds the key (seeded directly: no admin exists yet to create accounts).
  await s.kernel.db('users').insert({ id: 'usr_01h455vb4pex5vsknk084sn02q', email: 'holder@example.com' });
  await s.kernel.db('user_keys').insert({
    id: 'key_01h455vb4pex5vsknk084sn02q',
    user_id: 'usr_01h455vb4pex5vsknk084sn02q',
    type: 'ssh-ed25519',
    public_key: other.publicLine,
    fingerprint: other.fingerprint,
  });
  writeFileSync(s.triggerFile, ''); // a user exists, so auto-open is over: use a recovery window
  const rows = await authRows(s.kernel);
  const res = await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com', public_key: other.publicLine });
  t.is(res.statusCode, 409);
  t.is(res.body.message, `key ${other.fingerprint} is already registered`);
  t.deepEqual(await authRows(s.kernel), rows);
  t.true(existsSync(s.triggerFile), 'a failed recovery keeps the window');
});

test('concurrency: five parallel bootstraps give exactly one 201, the others 409', async (t) => {
  const s = await server();
  const results = await Promise.all([0, 1, 2, 3, 4].map((i) => call(s.server, 'POST', '/auth/bootstrap', { email: `racer${i}@example.com` })));
  const winners = results.filter((r) => r.statusCode === 201);
  const losers = results.filter((r) => r.statusCode === 409);
  t.is(winners.length, 1, JSON.stringify(results.map((r) => [r.statusCode, r.body])));
  t.is(losers.length, 4);
  for (const l of losers) t.is(l.body.message, 'bootstrap is already completed: an administrator exists');
  t.like(await authRows(s.kernel), { users: 1, admins: 1 });
  const admin = await s.kernel.db('users').first('email');
  t.is(admin.email, winners[0].body.user.email);
});

test('token-less windows accept only clients on this host: a remote or proxied request is 403 and writes nothing', async (t) => {
  const s = await server();
  const remote = await s.server.inject({ method: 'POST', url: '/auth/bootstrap', payload: { email: 'intruder@example.com' }, remoteAddress: '203.0.113.9' });
  t.is(remote.statusCode, 403);
  t.regex(JSON.parse(remote.payload).message, /^the auto-open bootstrap window accepts only clients on this host .*set SVC_BOOTSTRAP_TOKEN/);
  const proxied = await s.server.inject({
    method: 'POST',
    url: '/auth/bootstrap',
    payload: { email: 'intruder@example.com' },
    headers: { 'x-forwarded-for': '203.0.113.9' },
  });
  t.is(proxied.statusCode, 403, 'a local proxy forwarding a remote client is not a local client');
  t.deepEqual(await authRows(s.kernel), NO_ROWS_AFTER_BOOT);
  const mapped = await s.server.inject({ method: 'POST', url: '/auth/bootstrap', payload: { email: 'admin@example.com' }, remoteAddress: '::ffff:127.0.0.1' });
  t.is(mapped.statusCode, 201, mapped.payload);

  writeFileSync(s.triggerFile, '');
  const recovery = await s.server.inject({ method: 'POST', url: '/auth/bootstrap', payload: { email: 'rescuer@example.com' }, remoteAddress: '::2' });
  t.is(recovery.statusCode, 403);
  t.regex(JSON.parse(recovery.payload).message, /^the recovery bootstrap window accepts only clients on this host/);
  t.like(await authRows(s.kernel), { users: 1, admins: 1 });
});

test('secure mode accepts the token from any host', async (t) => {
  const s = await server({ env: { SVC_BOOTSTRAP_TOKEN: 'remote-bootstrap-secret' } });
  const res = await s.server.inject({
    method: 'POST',
    url: '/auth/bootstrap',
    payload: { email: 'admin@example.com', token: 'remote-bootstrap-secret' },
    remoteAddress: '203.0.113.9',
  });
  t.is(res.statusCode, 201, res.payload);
});

test('the start notice says whether the window is open, until when, and the command to run', async (t) => {
  const open = await server();
  const notice = await open.kernel.container.resolve(Bootstrap).startNotice();
  t.is(notice?.level, 'warn');
  t.regex(
    notice!.line,
    /^bootstrap: the auto-open window is open until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ to clients on this host only; run `svc auth bootstrap --email you@example\.com` here$/,
  );
  t.is((await call(open.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' })).statusCode, 201);
  t.is(await open.kernel.container.resolve(Bootstrap).startNotice(), null, 'nothing to say once an admin exists');

  const secure = await server({ env: { SVC_BOOTSTRAP_TOKEN: 'x'.repeat(20) } });
  t.regex((await secure.kernel.container.resolve(Bootstrap).startNotice())!.line, /--token <SVC_BOOTSTRAP_TOKEN>/);
  const closed = await server({ env: { NODE_ENV: 'production' } });
  t.regex((await closed.kernel.container.resolve(Bootstrap).startNotice())!.line, /window is closed: NODE_ENV=production requires SVC_BOOTSTRAP_TOKEN/);
});
