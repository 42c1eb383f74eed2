// POST /auth/exchange: identity-provider tokens (HS256) become service tokens; invites apply on the way.
// Tests that compare row counts are serial (ava runs them first, alone).
import test from 'ava';
import { SignJWT } from 'jose';
import { as, call, startTestServer, type TestServer } from '../support/server.ts';

const SECRET = 'idp-shared-secret-of-at-least-32-characters';
const ISSUER = 'https://idp.example.test';
const SSO = { auth: { sso: { secret: SECRET, issuer: ISSUER, audience: 'svc' }, identity_provider_url: 'https://idp.example.test/login' } };

let s: TestServer;
let admin: ReturnType<typeof as>;
let orgId = '';
let counter = 0;
const email = (prefix: string) => `${prefix}${++counter}@example.com`;

interface IdTokenOptions {
  secret?: string;
  issuer?: string;
  audience?: string;
  expiresIn?: string | number | null;
  claims?: Record<string, unknown>;
}

function idToken(address: string | null, opts: IdTokenOptions = {}): Promise<string> {
  const claims = { ...(address === null ? {} : { email: address }), ...opts.claims };
  let jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setIssuer(opts.issuer ?? ISSUER)
    .setAudience(opts.audience ?? 'svc');
  if (opts.expiresIn !== null) jwt = jwt.setExpirationTime(opts.expiresIn ?? '5m');
  return jwt.sign(new TextEncoder().encode(opts.secret ?? SECRET));
}

const exchange = (payload: unknown) => call(s.server, 'POST', '/auth/exchange', payload);
const userCount = async () => Number(((await s.kernel.db('users').count({ n: '*' }).first()) as { n: number }).n);

test.before(async () => {
  s = await startTestServer({ overrides: SSO });
  const boot = await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' });
  admin = as(s.server, boot.body.access_token);
  orgId = (await admin.post('/orgs', { name: 'SSO Org' })).body.id;
});

test.after.always(async () => {
  await s?.stop();
});

test('a new e-mail: 200 with a service token, the account is created with the name claim', async (t) => {
  const address = email('web');
  const res = await exchange({ token: await idToken(address.toUpperCase(), { claims: { name: 'Web User' } }) });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.is(res.body.token_type, 'Bearer');
  t.like(res.body.user, { email: address, display_name: 'Web User', is_admin: false });
  t.deepEqual(Object.keys(res.body).sort(), ['access_token', 'expires_at', 'token_type', 'user']);
  const me = await as(s.server, res.body.access_token).get('/auth/me');
  t.is(me.statusCode, 200);
  t.is(me.body.user.id, res.body.user.id);
});

test('an existing account is found by e-mail, whatever its case; ttl_days is honoured', async (t) => {
  const address = email('again');
  const first = await exchange({ token: await idToken(address) });
  const second = await exchange({ token: await idToken(address.toUpperCase()), ttl_days: 7 });
  t.is(second.statusCode, 200);
  t.is(second.body.user.id, first.body.user.id);
  const days = (Date.parse(second.body.expires_at) - Date.now()) / 86_400_000;
  t.true(days > 6.9 && days <= 7.01, String(days));
});

test('pending e-mail invites are applied: the account joins the org with the invited role', async (t) => {
  const address = email('invited');
  const invite = await admin.post('/auth/invites', { org_id: orgId, role: 'admin', email: address });
  t.is(invite.statusCode, 201, JSON.stringify(invite.body));
  const res = await exchange({ token: await idToken(address) });
  t.is(res.statusCode, 200);
  const member = await s.kernel.db('org_members').where({ org_id: orgId, user_id: res.body.user.id }).first();
  t.is(member?.role, 'admin');
  const orgs = await as(s.server, res.body.access_token).get('/orgs');
  t.deepEqual(
    orgs.body.data.map((o: { id: string }) => o.id),
    [orgId],
  );
  const listed = (await admin.get(`/orgs/${orgId}/invites`)).body.data.find((i: { id: string }) => i.id === invite.body.id);
  t.like(listed, { status: 'accepted', accepted_by: res.body.user.id });
});

const rejected: [string, () => Promise<string>, RegExp][] = [
  ['a bad signature', () => idToken('sig@example.com', { secret: 'another-secret-that-is-long-enough-too' }), /invalid token or signature/],
  ['the wrong issuer', () => idToken('iss@example.com', { issuer: 'https://evil.example' }), /"iss"/],
  ['the wrong audience', () => idToken('aud@example.com', { audience: 'other-service' }), /"aud"/],
  ['an expired token', () => idToken('exp@example.com', { expiresIn: Math.floor(Date.now() / 1000) - 120 }), /expired/],
  ['no expiry', () => idToken('noexp@example.com', { expiresIn: null }), /"exp"/],
  ['no email claim', () => idToken(null, { claims: { sub: 'someone' } }), /email/],
  ['an unverified email', () => idToken('unverified@example.com', { claims: { email_verified: false } }), /not verified/],
  ['a malformed email', () => idToken('not-an-email'), /email/],
  ['not a JWT at all', async () => 'not.a.jwt', /invalid token or signature/],
];
for (const [name, make, message] of rejected) {
  test.serial(`${name}: 401, nothing written`, async (t) => {
    const before = await userCount();
    const res = await exchange({ token: await make() });
    t.is(res.statusCode, 401, JSON.stringify(res.body));
    t.regex(res.body.message, message);
    t.is(await userCount(), before);
  });
}

test('an RS256 or unsigned token is refused (only HS256 is accepted)', async (t) => {
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(
    JSON.stringify({ email: 'none@example.com', iss: ISSUER, aud: 'svc', exp: Math.floor(Date.now() / 1000) + 60 }),
  ).toString('base64url')}.`;
  const res = await exchange({ token: unsigned });
  t.is(res.statusCode, 401);
});

for (const [name, payload] of [
  ['no body fields', {}],
  ['a number for token', { token: 5 }],
  ['an unknown field', { token: 'a.b.c', extra: 1 }],
  ['ttl_days out of range', { token: 'a.b.c', ttl_days: 91 }],
] as const) {
  test.serial(`malformed input (${name}): 400, nothing written`, async (t) => {
    const before = await userCount();
    const res = await exchange(payload);
    t.is(res.statusCode, 400);
    t.is(await userCount(), before);
  });
}

test('GET /auth/config shows the provider and public SSO settings, never the secret', async (t) => {
  const res = await call(s.server, 'GET', '/auth/config');
  t.is(res.statusCode, 200);
  t.is(res.body.identity_provider_url, 'https://idp.example.test/login');
  t.deepEqual(res.body.sso, { enabled: true, exchange_path: '/auth/exchange', issuer: ISSUER, audience: 'svc', algorithms: ['HS256'] });
  t.true(res.body.login_methods.includes('web-sso'));
  t.false(JSON.stringify(res.body).includes(SECRET));
});

test('without a configured provider: 501 naming the settings, and /auth/config says disabled', async (t) => {
  const plain = await startTestServer();
  try {
    const res = await call(plain.server, 'POST', '/auth/exchange', { token: await idToken('x@example.com') });
    t.is(res.statusCode, 501);
    t.regex(res.body.message, /auth\.sso\.secret/);
    const config = await call(plain.server, 'GET', '/auth/config');
    t.false(config.body.sso.enabled);
    t.false(config.body.login_methods.includes('web-sso'));
  } finally {
    await plain.stop();
  }
});
