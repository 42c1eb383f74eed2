// Key-signature login with real OpenSSH keys: register (POST /auth/keys), challenge, `ssh-keygen -Y sign`,
// verify; and every way it must fail, with nothing written by a failed request.
// Tests share one server; those that compare whole-table row counts are serial (ava runs them first, alone).
import test from 'ava';
import { readFileSync } from 'node:fs';
import { as, call, startTestServer, userInOrg, type TestServer } from '../support/server.ts';
import { MINUTE, authRows, makeKey, sshSign, tempDir, within, type SshKey } from './helpers.ts';

let s: TestServer;
let dir = '';
let cleanup: () => Promise<void> = async () => {};
let adminToken = '';
let orgId = '';
const keys: Record<string, SshKey> = {};
let counter = 0;

/** A fresh account in the org with an unscoped token (as after a login). */
async function newUser(prefix: string): Promise<{ email: string; token: string; api: ReturnType<typeof as> }> {
  const email = `${prefix}${++counter}@example.com`;
  const token = await userInOrg(s.server, adminToken, orgId, email);
  return { email, token, api: as(s.server, token) };
}

async function challenge(email: string) {
  const res = await call(s.server, 'POST', '/auth/challenge', { email });
  if (res.statusCode !== 200) throw new Error(`challenge: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body as { challenge_id: string; nonce: string; namespace: string; expires_at: string };
}

async function login(email: string, key: SshKey, namespace = 'svc-auth') {
  const c = await challenge(email);
  const signature = await sshSign(key, c.nonce, namespace);
  return call(s.server, 'POST', '/auth/verify', { challenge_id: c.challenge_id, signature });
}

test.before(async () => {
  const tmp = await tempDir();
  dir = tmp.dir;
  cleanup = tmp.cleanup;
  s = await startTestServer();
  const boot = await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' });
  adminToken = boot.body.access_token;
  orgId = (await as(s.server, adminToken).post('/orgs', { name: 'Keys Org' })).body.id;
  const specs: [string, 'ed25519' | 'ecdsa' | 'rsa', number | undefined][] = [
    ['ed25519', 'ed25519', undefined],
    ['ecdsa', 'ecdsa', 256],
    ['rsa', 'rsa', 3072],
    ['stranger', 'ed25519', undefined],
    ['weakrsa', 'rsa', 1024],
  ];
  await Promise.all(
    specs.map(async ([name, type, bits]) => {
      keys[name] = await makeKey(dir, name, type, bits, `${name} key`);
    }),
  );
});

test.after.always(async () => {
  await s?.stop();
  await cleanup();
});

for (const [name, type] of [
  ['ed25519', 'ssh-ed25519'],
  ['ecdsa', 'ecdsa-sha2-nistp256'],
  ['rsa', 'ssh-rsa'],
] as const) {
  test(`${name}: register, challenge, ssh-keygen -Y sign, verify, token works`, async (t) => {
    const user = await newUser(name);
    const key = keys[name];
    const t0 = Date.now();
    const reg = await user.api.post('/auth/keys', { public_key: `${key.publicLine}\n` });
    t.is(reg.statusCode, 201, JSON.stringify(reg.body));
    t.deepEqual(Object.keys(reg.body).sort(), ['created_at', 'fingerprint', 'id', 'label', 'type']);
    t.regex(reg.body.id, /^key_/);
    t.is(reg.body.type, type);
    t.is(reg.body.fingerprint, key.fingerprint, 'fingerprint as ssh-keygen -lf prints it');
    t.is(reg.body.label, `${name} key`, 'the key comment is the default label');
    within(t, reg.body.created_at, t0, Date.now());
    const stored = await s.kernel.db('user_keys').where({ id: reg.body.id }).first();
    t.is(stored.public_key, key.publicLine.split(' ').slice(0, 2).join(' '));

    const c0 = Date.now();
    const c = await challenge(user.email);
    t.regex(c.challenge_id, /^chl_/);
    t.is(c.namespace, 'svc-auth');
    t.is(typeof c.nonce, 'string');
    t.true(c.nonce.length >= 32);
    within(t, c.expires_at, c0 + 5 * MINUTE, Date.now() + 5 * MINUTE);

    const signature = await sshSign(key, c.nonce);
    t.true(signature.startsWith('-----BEGIN SSH SIGNATURE-----'));
    const res = await call(s.server, 'POST', '/auth/verify', { challenge_id: c.challenge_id, signature });
    t.is(res.statusCode, 200, JSON.stringify(res.body));
    t.is(res.body.token_type, 'Bearer');
    t.like(res.body.user, { email: user.email, is_admin: false });
    const me = await as(s.server, res.body.access_token).get('/auth/me');
    t.is(me.statusCode, 200);
    t.is(me.body.user.email, user.email);
    t.deepEqual(
      me.body.orgs.map((o: { id: string }) => o.id),
      [orgId],
    );
    t.not((await s.kernel.db('auth_challenges').where({ id: c.challenge_id }).first()).used_at, null);
  });
}

test('a labelled key keeps its label; e-mail case does not matter for login', async (t) => {
  const user = await newUser('label');
  const key = await makeKey(dir, 'labelled', 'ed25519');
  const reg = await user.api.post('/auth/keys', { public_key: key.publicLine, label: '  laptop  ' });
  t.is(reg.statusCode, 201);
  t.is(reg.body.label, 'laptop');
  const res = await login(user.email.toUpperCase(), key);
  t.is(res.statusCode, 200);
  t.is(res.body.user.email, user.email);
});

test('a challenge is single-use: the second verify is 401', async (t) => {
  const user = await newUser('reuse');
  const key = await makeKey(dir, 'reuse', 'ed25519');
  t.is((await user.api.post('/auth/keys', { public_key: key.publicLine })).statusCode, 201);
  const c = await challenge(user.email);
  const signature = await sshSign(key, c.nonce);
  t.is((await call(s.server, 'POST', '/auth/verify', { challenge_id: c.challenge_id, signature })).statusCode, 200);
  const again = await call(s.server, 'POST', '/auth/verify', { challenge_id: c.challenge_id, signature });
  t.is(again.statusCode, 401);
  t.is(again.body.message, 'challenge unknown or already used');

  // A failed verify consumes the challenge too: a nonce cannot be tried twice.
  const c2 = await challenge(user.email);
  const bad = await call(s.server, 'POST', '/auth/verify', { challenge_id: c2.challenge_id, signature: await sshSign(keys.stranger, c2.nonce) });
  t.is(bad.statusCode, 401);
  const retry = await call(s.server, 'POST', '/auth/verify', { challenge_id: c2.challenge_id, signature: await sshSign(key, c2.nonce) });
  t.is(retry.statusCode, 401);
  t.is(retry.body.message, 'challenge unknown or already used');
});

test('an expired challenge is 401', async (t) => {
  const user = await newUser('expired');
  const key = await makeKey(dir, 'expired', 'ecdsa', 256);
  t.is((await user.api.post('/auth/keys', { public_key: key.publicLine })).statusCode, 201);
  const c = await challenge(user.email);
  await s.kernel
    .db('auth_challenges')
    .where({ id: c.challenge_id })
    .update({ expires_at: new Date(Date.now() - 1000) });
  const res = await call(s.server, 'POST', '/auth/verify', { challenge_id: c.challenge_id, signature: await sshSign(key, c.nonce) });
  t.is(res.statusCode, 401);
  t.is(res.body.message, 'challenge expired');
});

test('a signature by a key not registered to the account is 401 naming its fingerprint', async (t) => {
  const user = await newUser('unreg');
  const key = await makeKey(dir, 'unreg', 'ed25519');
  t.is((await user.api.post('/auth/keys', { public_key: key.publicLine })).statusCode, 201);
  const res = await login(user.email, keys.stranger);
  t.is(res.statusCode, 401);
  t.is(res.body.message, `no key ${keys.stranger.fingerprint} is registered for ${user.email}`);

  // Another user's registered key does not log in as this user either.
  const other = await newUser('other');
  const otherKey = await makeKey(dir, 'otherkey', 'ed25519');
  t.is((await other.api.post('/auth/keys', { public_key: otherKey.publicLine })).statusCode, 201);
  const cross = await login(user.email, otherKey);
  t.is(cross.statusCode, 401);
  t.is(cross.body.message, `no key ${otherKey.fingerprint} is registered for ${user.email}`);
});

test('a signature for another namespace, or over other bytes, or not a signature at all, is 401', async (t) => {
  const user = await newUser('ns');
  const key = await makeKey(dir, 'ns', 'ed25519');
  t.is((await user.api.post('/auth/keys', { public_key: key.publicLine })).statusCode, 201);

  const wrongNs = await login(user.email, key, 'git');
  t.is(wrongNs.statusCode, 401);
  t.is(wrongNs.body.message, 'signature rejected: Signature was made for a different namespace; expected "svc-auth".');

  const c = await challenge(user.email);
  const withNewline = await call(s.server, 'POST', '/auth/verify', { challenge_id: c.challenge_id, signature: await sshSign(key, `${c.nonce}\n`) });
  t.is(withNewline.statusCode, 401);
  t.is(withNewline.body.message, 'signature rejected: SSH signature does not verify.');

  const c2 = await challenge(user.email);
  const other = await challenge(user.email);
  const replayed = await call(s.server, 'POST', '/auth/verify', { challenge_id: c2.challenge_id, signature: await sshSign(key, other.nonce) });
  t.is(replayed.statusCode, 401, 'a signature of another challenge’s nonce');
  t.is(replayed.body.message, 'signature rejected: SSH signature does not verify.');

  const c3 = await challenge(user.email);
  const junk = await call(s.server, 'POST', '/auth/verify', { challenge_id: c3.challenge_id, signature: 'hello' });
  t.is(junk.statusCode, 401);
  t.regex(junk.body.message, /^signature rejected: Signature must be an armored/);
});

test('verify input errors are 400 and consume nothing; an unknown challenge id is 401', async (t) => {
  const c = await challenge('nobody-here@example.com');
  for (const [payload, message] of [
    [{ challenge_id: c.challenge_id }, /"signature" is required/],
    [{ signature: 'x' }, /"challenge_id" is required/],
    [{ challenge_id: 'chl_nope', signature: 'x' }, /"challenge_id" .*chl_<base32> id/],
    [{ challenge_id: c.challenge_id, signature: 'x'.repeat(16_385) }, /"signature" length must be less than or equal to 16384/],
  ] as const) {
    const res = await call(s.server, 'POST', '/auth/verify', payload);
    t.is(res.statusCode, 400, JSON.stringify(res.body));
    t.regex(res.body.message, message);
  }
  t.is((await s.kernel.db('auth_challenges').where({ id: c.challenge_id }).first()).used_at, null);
  const unknown = await call(s.server, 'POST', '/auth/verify', { challenge_id: 'chl_01h455vb4pex5vsknk084sn02q', signature: 'x' });
  t.is(unknown.statusCode, 401);
  t.is(unknown.body.message, 'challenge unknown or already used');

  const badEmail = await call(s.server, 'POST', '/auth/challenge', { email: 'nope' });
  t.is(badEmail.statusCode, 400);
  t.regex(badEmail.body.message, /"email" must be a valid email/);
});

test.serial('a challenge for an unknown e-mail is issued like any other, but verify is 401 and creates no user', async (t) => {
  const rows = await authRows(s.kernel);
  const c = await challenge('ghost@example.com');
  t.is(c.namespace, 'svc-auth');
  const res = await call(s.server, 'POST', '/auth/verify', { challenge_id: c.challenge_id, signature: await sshSign(keys.stranger, c.nonce) });
  t.is(res.statusCode, 401);
  t.is(res.body.message, `no key ${keys.stranger.fingerprint} is registered for ghost@example.com`);
  t.deepEqual(await authRows(s.kernel), rows);
  t.falsy(await s.kernel.db('users').where({ email: 'ghost@example.com' }).first());
});

test.serial('registering a key held by another account is 409; your own duplicate is 409; nothing is written', async (t) => {
  const owner = await newUser('holder');
  const thief = await newUser('thief');
  const key = await makeKey(dir, 'held', 'ed25519', undefined, 'held key');
  t.is((await owner.api.post('/auth/keys', { public_key: key.publicLine })).statusCode, 201);
  const rows = await authRows(s.kernel);

  const stolen = await thief.api.post('/auth/keys', { public_key: key.publicLine });
  t.is(stolen.statusCode, 409);
  t.is(stolen.body.message, `key ${key.fingerprint} is already registered`);
  const relabelled = await thief.api.post('/auth/keys', { public_key: `${key.publicLine.split(' ').slice(0, 2).join(' ')} another comment` });
  t.is(relabelled.statusCode, 409, 'the comment does not make it another key');
  const dup = await owner.api.post('/auth/keys', { public_key: key.publicLine });
  t.is(dup.statusCode, 409);
  t.is(dup.body.message, `key ${key.fingerprint} is already registered`);
  t.deepEqual(await authRows(s.kernel), rows);
  t.is((await thief.api.get('/auth/keys')).body.pagination.total, 0);
});

test.serial('malformed keys are 400 naming public_key, and nothing is written', async (t) => {
  const user = await newUser('malformed');
  const ed = keys.ed25519.publicLine.split(' ');
  const privateKey = readFileSync(keys.stranger.file, 'utf8');
  const cases: [unknown, RegExp][] = [
    ['', /"public_key" is not allowed to be empty/],
    ['garbage', /"public_key" Public key must look like/],
    [`ssh-ed25519 ${ed[1].slice(0, -4)}`, /"public_key" Public key is truncated or malformed/],
    ['ssh-ed25519 @@@@', /"public_key" Public key is not valid base64/],
    [`ssh-rsa ${ed[1]}`, /"public_key" Public key type does not match its encoded data/],
    ['ssh-dss AAAAB3NzaC1kc3MAAACBAP8=', /"public_key" Unsupported SSH key type "ssh-dss"/],
    [keys.weakrsa.publicLine, /"public_key" RSA keys must be at least 2048 bits/],
    [privateKey, /"public_key" /],
    [`${keys.ed25519.publicLine}\n${keys.ecdsa.publicLine}`, /"public_key" Public key must be a single line/],
    [42, /"public_key" must be a string/],
  ];
  const rows = await authRows(s.kernel);
  for (const [publicKey, message] of cases) {
    const res = await user.api.post('/auth/keys', { public_key: publicKey });
    t.is(res.statusCode, 400, String(publicKey).slice(0, 40));
    t.regex(res.body.message, message);
  }
  const noKey = await user.api.post('/auth/keys', { label: 'x' });
  t.is(noKey.statusCode, 400);
  t.regex(noKey.body.message, /"public_key" is required/);
  t.deepEqual(await authRows(s.kernel), rows);
});

test('key routes need a token', async (t) => {
  t.is((await call(s.server, 'POST', '/auth/keys', { public_key: keys.ed25519.publicLine })).statusCode, 401);
  t.is((await call(s.server, 'GET', '/auth/keys')).statusCode, 401);
  t.is((await call(s.server, 'DELETE', '/auth/keys/key_01h455vb4pex5vsknk084sn02q')).statusCode, 401);
});

test('DELETE /auth/keys/{id}: 204, then the key no longer logs in; another user’s key id is 404', async (t) => {
  const user = await newUser('deleter');
  const other = await newUser('bystander');
  const key = await makeKey(dir, 'todelete', 'ed25519');
  const otherKey = await makeKey(dir, 'kept', 'ed25519');
  const reg = await user.api.post('/auth/keys', { public_key: key.publicLine });
  const otherReg = await other.api.post('/auth/keys', { public_key: otherKey.publicLine });
  t.is((await login(user.email, key)).statusCode, 200);

  const foreign = await user.api.delete(`/auth/keys/${otherReg.body.id}`);
  t.is(foreign.statusCode, 404);
  t.is(foreign.body.message, `key ${otherReg.body.id} not found`);
  t.truthy(await s.kernel.db('user_keys').where({ id: otherReg.body.id }).first(), 'the other user keeps the key');
  t.is((await login(other.email, otherKey)).statusCode, 200);

  const bad = await user.api.delete('/auth/keys/not-a-key');
  t.is(bad.statusCode, 400);
  t.regex(bad.body.message, /"key_id"/);

  const del = await user.api.delete(`/auth/keys/${reg.body.id}`);
  t.is(del.statusCode, 204);
  t.is(del.body, null);
  t.falsy(await s.kernel.db('user_keys').where({ id: reg.body.id }).first());
  const again = await user.api.delete(`/auth/keys/${reg.body.id}`);
  t.is(again.statusCode, 404);

  const res = await login(user.email, key);
  t.is(res.statusCode, 401);
  t.is(res.body.message, `no key ${key.fingerprint} is registered for ${user.email}`);
  t.is((await user.api.get('/auth/keys')).body.pagination.total, 0);

  // Once deleted, the key can be registered again (by anyone).
  t.is((await other.api.post('/auth/keys', { public_key: key.publicLine })).statusCode, 201);
});

test('GET /auth/keys lists only your keys, newest first, paginated', async (t) => {
  const user = await newUser('pager');
  const other = await newUser('pager-other');
  const made: SshKey[] = [];
  for (const i of [0, 1, 2]) {
    const key = await makeKey(dir, `page${i}`, 'ed25519');
    made.push(key);
    t.is((await user.api.post('/auth/keys', { public_key: key.publicLine, label: `k${i}` })).statusCode, 201);
  }
  t.is((await other.api.post('/auth/keys', { public_key: (await makeKey(dir, 'page-other', 'ed25519')).publicLine })).statusCode, 201);

  const all = await user.api.get('/auth/keys');
  t.is(all.statusCode, 200);
  t.deepEqual(
    all.body.data.map((k: { label: string }) => k.label),
    ['k2', 'k1', 'k0'],
  );
  t.deepEqual(all.body.pagination, { limit: 10, offset: 0, count: 3, total: 3, has_more: false });

  const first = await user.api.get('/auth/keys?limit=2');
  t.deepEqual(
    first.body.data.map((k: { fingerprint: string }) => k.fingerprint),
    [made[2].fingerprint, made[1].fingerprint],
  );
  t.deepEqual(first.body.pagination, { limit: 2, offset: 0, count: 2, total: 3, has_more: true });
  const second = await user.api.get('/auth/keys?limit=2&offset=2');
  t.deepEqual(
    second.body.data.map((k: { label: string }) => k.label),
    ['k0'],
  );
  t.deepEqual(second.body.pagination, { limit: 2, offset: 2, count: 1, total: 3, has_more: false });
  const past = await user.api.get('/auth/keys?offset=10');
  t.deepEqual(past.body.pagination, { limit: 10, offset: 10, count: 0, total: 3, has_more: false });

  for (const q of ['limit=0', 'limit=101', 'offset=-1', 'limit=x']) {
    const res = await user.api.get(`/auth/keys?${q}`);
    t.is(res.statusCode, 400, q);
    t.regex(res.body.message, /"(limit|offset)"/);
  }
});
