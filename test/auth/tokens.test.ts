// Service tokens: lifetime (1 day default, 1-90 days on request), verification failures, the Bearer
// header, JWKS and signing-key rotation (also across two replicas on one database), /auth/config.
// Tests share one server; the one comparing whole-table row counts is serial (ava runs it first, alone).
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { SignJWT, generateKeyPair } from 'jose';
import { as, call, startTestServer, userInOrg, type TestServer } from '../support/server.ts';
import { createTestDatabase } from '../support/database.ts';
import { SigningKeys } from '../../core/auth/signing-keys.ts';
import { DAY, authRows, jwtClaims, jwtHeader, makeKey, sshSign, tempDir, within, type SshKey } from './helpers.ts';

const servers: TestServer[] = [];
const cleanups: (() => Promise<void>)[] = [];

let s: TestServer; // shared server: an admin, an org, alice with a key
let adminToken = '';
let adminId = '';
let orgId = '';
let aliceToken = '';
let aliceKey: SshKey;

test.before(async () => {
  const tmp = await tempDir();
  cleanups.push(tmp.cleanup);
  s = await startTestServer();
  servers.push(s);
  const boot = await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' });
  adminToken = boot.body.access_token;
  adminId = boot.body.user.id;
  orgId = (await as(s.server, adminToken).post('/orgs', { name: 'Tokens Org' })).body.id;
  aliceKey = await makeKey(tmp.dir, 'alice', 'ed25519');
  aliceToken = await userInOrg(s.server, adminToken, orgId, 'alice@example.com');
  const reg = await as(s.server, aliceToken).post('/auth/keys', { public_key: aliceKey.publicLine });
  if (reg.statusCode !== 201) throw new Error(JSON.stringify(reg.body));
});

test.after.always(async () => {
  await Promise.all(servers.map((x) => x.stop()));
  for (const c of cleanups) await c();
});

async function sshLogin(server: TestServer, email: string, key: SshKey, extra: Record<string, unknown> = {}) {
  const challenge = await call(server.server, 'POST', '/auth/challenge', { email });
  const signature = await sshSign(key, challenge.body.nonce);
  return {
    challenge: challenge.body,
    res: await call(server.server, 'POST', '/auth/verify', { challenge_id: challenge.body.challenge_id, signature, ...extra }),
  };
}

test('default lifetime is one day; /auth/me reports it', async (t) => {
  const t0 = Date.now();
  const { res } = await sshLogin(s, 'alice@example.com', aliceKey);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  within(t, res.body.expires_at, t0 + DAY, Date.now() + DAY);
  const claims = jwtClaims(res.body.access_token);
  t.is((claims.exp as number) - (claims.iat as number), 86_400);
  t.is(claims.iss, 'svc');
  t.is(claims.sub, res.body.user.id);
  const me = await as(s.server, res.body.access_token).get('/auth/me');
  t.is(me.body.token.expires_at, res.body.expires_at);
});

test.serial('ttl_days: 0, 91, 1.5 and "x" are 400 naming ttl_days on bootstrap, verify and mint; nothing is written', async (t) => {
  const fresh = await startTestServer();
  servers.push(fresh);
  const bad: [unknown, RegExp][] = [
    [0, /"ttl_days" must be greater than or equal to 1/],
    [91, /"ttl_days" must be less than or equal to 90/],
    [1.5, /"ttl_days" must be an integer/],
    ['x', /"ttl_days" must be a number/],
  ];
  const freshRows = await authRows(fresh.kernel);
  const rows = await authRows(s.kernel);
  for (const [ttl, message] of bad) {
    const boot = await call(fresh.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com', ttl_days: ttl });
    t.is(boot.statusCode, 400, `bootstrap ${ttl}`);
    t.regex(boot.body.message, message);

    const challenge = await call(s.server, 'POST', '/auth/challenge', { email: 'alice@example.com' });
    const signature = await sshSign(aliceKey, challenge.body.nonce);
    const verify = await call(s.server, 'POST', '/auth/verify', { challenge_id: challenge.body.challenge_id, signature, ttl_days: ttl });
    t.is(verify.statusCode, 400, `verify ${ttl}`);
    t.regex(verify.body.message, message);
    const row = await s.kernel.db('auth_challenges').where({ id: challenge.body.challenge_id }).first();
    t.is(row.used_at, null, 'a rejected verify does not consume the challenge');

    const mint = await as(s.server, adminToken).post('/auth/mint', { email: 'ttl-victim@example.com', org_id: orgId, ttl_days: ttl });
    t.is(mint.statusCode, 400, `mint ${ttl}`);
    t.regex(mint.body.message, message);
  }
  t.deepEqual(await authRows(fresh.kernel), freshRows);
  t.deepEqual(await authRows(s.kernel), rows);
  t.falsy(await s.kernel.db('users').where({ email: 'ttl-victim@example.com' }).first());

  const t0 = Date.now();
  const boot = await call(fresh.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com', ttl_days: 90 });
  t.is(boot.statusCode, 201);
  within(t, boot.body.expires_at, t0 + 90 * DAY, Date.now() + 90 * DAY);
});

test('ttl_days 90 is accepted on verify and mint; 1 on mint', async (t) => {
  const t0 = Date.now();
  const { res } = await sshLogin(s, 'alice@example.com', aliceKey, { ttl_days: 90 });
  t.is(res.statusCode, 200);
  within(t, res.body.expires_at, t0 + 90 * DAY, Date.now() + 90 * DAY);
  t.is((await as(s.server, res.body.access_token).get('/auth/me')).statusCode, 200);

  const mint = await as(s.server, adminToken).post('/auth/mint', { email: 'long@example.com', org_id: orgId, ttl_days: 90 });
  t.is(mint.statusCode, 201);
  within(t, mint.body.expires_at, t0 + 90 * DAY, Date.now() + 90 * DAY);
  const short = await as(s.server, adminToken).post('/auth/mint', { email: 'long@example.com', org_id: orgId, ttl_days: 1 });
  within(t, short.body.expires_at, t0 + DAY, Date.now() + DAY);
  const dflt = await as(s.server, adminToken).post('/auth/mint', { email: 'long@example.com', org_id: orgId });
  within(t, dflt.body.expires_at, t0 + DAY, Date.now() + DAY);
});

test('an expired token is 401 "token expired"', async (t) => {
  const { token } = await s.kernel.container.resolve(SigningKeys).sign({ typ: 'user', email: 'admin@example.com' }, adminId, -60);
  const res = await as(s.server, token).get('/auth/me');
  t.is(res.statusCode, 401);
  t.deepEqual(res.body, { statusCode: 401, error: 'Unauthorized', message: 'token expired' });
  t.is(res.headers['www-authenticate'], 'Bearer error="invalid_token", error_description="token expired"');
});

test('tokens signed by a foreign RS256 key are 401 "invalid token", whatever kid they claim', async (t) => {
  const { privateKey } = await generateKeyPair('RS256');
  const serverKid = jwtHeader(adminToken).kid as string;
  const now = Math.floor(Date.now() / 1000);
  const forge = (header: Record<string, unknown>) =>
    new SignJWT({ typ: 'user', email: 'admin@example.com' })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...header })
      .setIssuer('svc')
      .setSubject(adminId)
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .setJti('x')
      .sign(privateKey);
  for (const header of [{ kid: serverKid }, { kid: 'made-up-kid' }, {}]) {
    const res = await as(s.server, await forge(header)).get('/auth/me');
    t.is(res.statusCode, 401, JSON.stringify(header));
    t.is(res.body.message, 'invalid token');
  }
  // HS256 with the server's public key as the secret (algorithm confusion) is refused too.
  const jwk = (await call(s.server, 'GET', '/.well-known/jwks.json')).body.keys[0];
  const hs = await new SignJWT({ typ: 'user', email: 'admin@example.com' })
    .setProtectedHeader({ alg: 'HS256', kid: serverKid })
    .setIssuer('svc')
    .setSubject(adminId)
    .setIssuedAt(now)
    .setExpirationTime(now + 3600)
    .sign(Buffer.from(JSON.stringify(jwk)));
  t.is((await as(s.server, hs).get('/auth/me')).statusCode, 401);
});

test('a tampered payload, another issuer or a non-user token type is 401', async (t) => {
  const [h, , sig] = adminToken.split('.');
  const claims = { ...jwtClaims(adminToken), sub: 'usr_01h455vb4pex5vsknk084sn02q' };
  const tampered = [h, Buffer.from(JSON.stringify(claims)).toString('base64url'), sig].join('.');
  const r1 = await as(s.server, tampered).get('/auth/me');
  t.is(r1.statusCode, 401);
  t.is(r1.body.message, 'invalid token');

  const keys = s.kernel.container.resolve(SigningKeys);
  const job = await keys.sign({ typ: 'job', email: 'admin@example.com' }, adminId, 600);
  const r2 = await as(s.server, job.token).get('/auth/me');
  t.is(r2.statusCode, 401);
  t.is(r2.body.message, 'invalid token');

  const badScope = await keys.sign({ typ: 'user', email: 'admin@example.com', scope: { type: 'galaxy', id: 'x' } }, adminId, 600);
  const r3 = await as(s.server, badScope.token).get('/auth/me');
  t.is(r3.statusCode, 401);
  t.is(r3.body.message, 'invalid token');
});

test('the Authorization header: missing, malformed, other schemes are 401; the scheme name is case-insensitive', async (t) => {
  const none = await call(s.server, 'GET', '/auth/me');
  t.is(none.statusCode, 401);
  t.deepEqual(none.body, { statusCode: 401, error: 'Unauthorized', message: 'missing bearer token' });
  t.is(none.headers['www-authenticate'], 'Bearer', 'no error code when no credentials came (RFC 6750 section 3.1)');
  for (const header of ['Bearer', 'Bearer ', 'Basic x', 'Basic YWRtaW46YWRtaW4=', `Token ${adminToken}`, `Bearer ${adminToken} extra`]) {
    const res = await s.server.inject({ method: 'GET', url: '/auth/me', headers: { authorization: header } });
    t.is(res.statusCode, 401, header);
    t.is(JSON.parse(res.payload).message, 'malformed authorization header: expected Bearer <token>', header);
    t.regex(String(res.headers['www-authenticate']), /^Bearer error="invalid_request"/);
  }
  for (const header of ['Bearer a.b.c', 'Bearer abc', 'Bearer a.b', 'Bearer a.b.c.d', 'Bearer not-a-jwt!']) {
    const garbage = await s.server.inject({ method: 'GET', url: '/auth/me', headers: { authorization: header } });
    t.is(garbage.statusCode, 401, header);
    t.is(JSON.parse(garbage.payload).message, 'invalid token', header);
    t.regex(String(garbage.headers['www-authenticate']), /^Bearer error="invalid_token"/, header);
  }
  for (const header of [`bearer ${adminToken}`, `BEARER ${adminToken}`, `Bearer   ${adminToken}`]) {
    const res = await s.server.inject({ method: 'GET', url: '/auth/me', headers: { authorization: header } });
    t.is(res.statusCode, 200, header);
  }
});

test('a token whose user was deleted is 401', async (t) => {
  const mint = await as(s.server, adminToken).post('/auth/mint', { email: 'doomed@example.com', org_id: orgId });
  t.is(mint.statusCode, 201);
  t.is((await as(s.server, mint.body.access_token).get(`/orgs/${orgId}`)).statusCode, 200);
  await s.kernel.db('users').where({ id: mint.body.user.id }).delete();
  const res = await as(s.server, mint.body.access_token).get(`/orgs/${orgId}`);
  t.is(res.statusCode, 401);
  t.is(res.body.message, 'the user of this token no longer exists');
});

test('GET /.well-known/jwks.json publishes the public key named by the token kid, and nothing private', async (t) => {
  const res = await call(s.server, 'GET', '/.well-known/jwks.json');
  t.is(res.statusCode, 200);
  const kid = jwtHeader(adminToken).kid;
  t.is(jwtHeader(adminToken).alg, 'RS256');
  const key = res.body.keys.find((k: Record<string, unknown>) => k.kid === kid);
  t.like(key, { kty: 'RSA', alg: 'RS256', use: 'sig', e: 'AQAB' });
  t.is(typeof key.n, 'string');
  for (const k of res.body.keys) for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi']) t.false(secret in k, `JWKS leaks ${secret}`);
});

test('GET /auth/config describes issuer, JWKS, algorithms, namespace and TTL bounds', async (t) => {
  const res = await call(s.server, 'GET', '/auth/config');
  t.is(res.statusCode, 200);
  t.like(res.body, {
    issuer: 'svc',
    algorithms: ['RS256'],
    identity_provider_url: null,
    ssh_signature_namespace: 'svc-auth',
    token_ttl_days: { default: 1, min: 1, max: 90 },
  });
  t.regex(res.body.jwks_uri, /^https?:\/\/[^/]+\/\.well-known\/jwks\.json$/);
  t.true(Array.isArray(res.body.login_methods) && res.body.login_methods.includes('ssh-signature'));
  t.deepEqual(Object.keys(res.body).sort(), [
    'algorithms',
    'identity_provider_url',
    'issuer',
    'jwks_uri',
    'login_methods',
    'ssh_signature_namespace',
    'sso',
    'token_ttl_days',
  ]);
});

test('rotation: old tokens keep working, new ones carry the new kid, JWKS has both; only the admin rotates', async (t) => {
  const r = await startTestServer();
  servers.push(r);
  const boot = await call(r.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' });
  const admin = as(r.server, boot.body.access_token);
  const oldKid = jwtHeader(boot.body.access_token).kid;
  const org = await admin.post('/orgs', { name: 'Rot' });
  const member = await admin.post('/auth/mint', { email: 'member@example.com', org_id: org.body.id, role: 'owner' });
  const selfScoped = await admin.post('/auth/mint', { email: 'admin@example.com', org_id: org.body.id, role: 'owner' });

  t.is((await call(r.server, 'POST', '/auth/signing-keys/rotate')).statusCode, 401);
  for (const token of [member.body.access_token, selfScoped.body.access_token]) {
    const denied = await as(r.server, token).post('/auth/signing-keys/rotate');
    t.is(denied.statusCode, 403);
    t.is(denied.body.message, 'this operation needs the system administrator');
  }
  t.is(Number((await r.kernel.db('signing_keys').count({ n: '*' }).first())!.n), 1, 'refused rotations made no key');

  const rotated = await admin.post('/auth/signing-keys/rotate');
  t.is(rotated.statusCode, 200);
  t.not(rotated.body.kid, oldKid);
  t.is((await admin.get('/auth/me')).statusCode, 200, 'a token of the retired key still verifies');
  t.is((await as(r.server, member.body.access_token).get(`/orgs/${org.body.id}`)).statusCode, 200);

  const fresh = await admin.post('/auth/mint', { email: 'member@example.com', org_id: org.body.id });
  t.is(jwtHeader(fresh.body.access_token).kid, rotated.body.kid);
  t.is((await as(r.server, fresh.body.access_token).get(`/orgs/${org.body.id}`)).statusCode, 200);

  const jwks = await call(r.server, 'GET', '/.well-known/jwks.json');
  t.deepEqual(jwks.body.keys.map((k: { kid: string }) => k.kid).sort(), [oldKid, rotated.body.kid].sort());
  const rows = await r.kernel.db('signing_keys').orderBy('created_at');
  t.deepEqual(
    rows.map((k) => [k.kid, k.active, k.retired_at !== null]),
    [
      [oldKid, false, true],
      [rotated.body.kid, true, false],
    ],
  );
});

test('replicas on one database: a rotation on one is used and accepted by the other at once', async (t) => {
  const database = await createTestDatabase();
  cleanups.push(() => database.drop());
  const masterKey = randomBytes(32).toString('hex');
  const a = await startTestServer({ database, overrides: { secrets: { master_key: masterKey } } });
  servers.push(a);
  const b = await startTestServer({ database, overrides: { secrets: { master_key: masterKey } } });
  servers.push(b);
  const boot = await call(a.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' });
  t.is(boot.statusCode, 201);
  t.is((await as(b.server, boot.body.access_token).get('/auth/me')).statusCode, 200);
  const org = await as(a.server, boot.body.access_token).post('/orgs', { name: 'Replicated' });

  const rotated = await as(a.server, boot.body.access_token).post('/auth/signing-keys/rotate');
  t.is(rotated.statusCode, 200);
  const jwksOnB = await call(b.server, 'GET', '/.well-known/jwks.json');
  t.true(
    jwksOnB.body.keys.some((k: { kid: string }) => k.kid === rotated.body.kid),
    'replica B publishes the key rotated on A at once',
  );
  const fromA = await as(a.server, boot.body.access_token).post('/auth/mint', { email: 'm@example.com', org_id: org.body.id });
  t.is(jwtHeader(fromA.body.access_token).kid, rotated.body.kid);
  const onB = await as(b.server, fromA.body.access_token).get(`/orgs/${org.body.id}`);
  t.is(onB.statusCode, 200, `replica B rejects a token of the new key: ${JSON.stringify(onB.body)}`);

  const fromB = await as(b.server, boot.body.access_token).post('/auth/mint', { email: 'm@example.com', org_id: org.body.id });
  t.is(fromB.statusCode, 201);
  t.is(jwtHeader(fromB.body.access_token).kid, rotated.body.kid, 'replica B keeps signing with the retired key');
  t.deepEqual((await call(b.server, 'GET', '/.well-known/jwks.json')).body.keys.length, 2);
  t.is((await as(b.server, boot.body.access_token).get('/auth/me')).statusCode, 200);
});
