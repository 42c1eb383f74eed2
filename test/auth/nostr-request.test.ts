// Request-level signature authentication: `Authorization: Nostr <base64 of a signed kind-27235 event>`
// over URL, method and body hash, with a ±60 s window and each event usable once.
import test from 'ava';
import { createHash } from 'node:crypto';
import { schnorr } from '@noble/curves/secp256k1.js';
import { as, call, startTestServer, userInOrg, type TestServer } from '../support/server.ts';
import { nostrAuthorization, nostrPublicKey, signEvent } from '../../cli/nostr.ts';

const HOST = 'api.test:8080';
const BASE = `http://${HOST}`;

let s: TestServer;
let adminToken = '';
let orgId = '';
let counter = 0;

interface Signer {
  email: string;
  token: string;
  secret: Uint8Array;
  pubkey: string;
}

/** A user in the org with a registered nostr key. */
async function signer(server: TestServer, prefix: string): Promise<Signer> {
  const email = `${prefix}${++counter}@example.com`;
  const token = await userInOrg(server.server, adminToken, orgId, email);
  const secret = schnorr.utils.randomSecretKey();
  const pubkey = nostrPublicKey(secret);
  const reg = await as(server.server, token).post('/auth/nostr-keys', { public_key: pubkey });
  if (reg.statusCode !== 201) throw new Error(`register: ${JSON.stringify(reg.body)}`);
  return { email, token, secret, pubkey };
}

/** A request with the exact body bytes given and the Authorization header given. */
async function send(server: TestServer, method: string, path: string, authorization: string, body?: string, host = HOST) {
  const res = await server.server.inject({
    method,
    url: path,
    payload: body,
    headers: { authorization, host, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
  });
  return { statusCode: res.statusCode, body: res.payload ? JSON.parse(res.payload) : null, headers: res.headers };
}

const headerOf = (event: object) => `Nostr ${Buffer.from(JSON.stringify(event)).toString('base64')}`;
const now = () => Math.floor(Date.now() / 1000);

test.before(async () => {
  s = await startTestServer();
  adminToken = (await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' })).body.access_token;
  orgId = (await as(s.server, adminToken).post('/orgs', { name: 'Signed Org' })).body.id;
});

test.after.always(async () => {
  await s?.stop();
});

test("a signed GET authenticates as the key's user, unscoped", async (t) => {
  const u = await signer(s, 'get');
  const res = await send(s, 'GET', '/auth/me', nostrAuthorization(u.secret, 'GET', `${BASE}/auth/me`));
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.is(res.body.user.email, u.email);
  t.is(res.body.token.scope, null);
  t.deepEqual(
    res.body.orgs.map((o: { id: string }) => o.id),
    [orgId],
  );
  // The scheme word is case-insensitive, like Bearer's; a query string is part of the signed URL.
  const lower = nostrAuthorization(u.secret, 'get', `${BASE}/auth/nostr-keys?limit=5`).replace(/^Nostr/, 'nostr');
  const list = await send(s, 'GET', '/auth/nostr-keys?limit=5', lower);
  t.is(list.statusCode, 200, JSON.stringify(list.body));
  t.is(list.body.data[0].pubkey, u.pubkey);
});

test('a signed POST with its body hash in the payload tag succeeds', async (t) => {
  const u = await signer(s, 'post');
  const extra = nostrPublicKey(schnorr.utils.randomSecretKey());
  const body = JSON.stringify({ public_key: extra, label: 'second' });
  const res = await send(s, 'POST', '/auth/nostr-keys', nostrAuthorization(u.secret, 'POST', `${BASE}/auth/nostr-keys`, body), body);
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.is(res.body.pubkey, extra);
  t.is((await s.kernel.db('user_nostr_keys').where({ pubkey: extra }).first()).user_id, (await s.kernel.db('users').where({ email: u.email }).first()).id);

  // A bodiless DELETE needs no payload tag.
  const del = await send(s, 'DELETE', `/auth/nostr-keys/${res.body.id}`, nostrAuthorization(u.secret, 'DELETE', `${BASE}/auth/nostr-keys/${res.body.id}`));
  t.is(del.statusCode, 204);
});

test('a body that does not match the payload tag, or a body without one, is 401 and does nothing', async (t) => {
  const u = await signer(s, 'hash');
  const extra = nostrPublicKey(schnorr.utils.randomSecretKey());
  const body = JSON.stringify({ public_key: extra });
  const signedOther = nostrAuthorization(u.secret, 'POST', `${BASE}/auth/nostr-keys`, JSON.stringify({ public_key: extra, label: 'x' }));
  const wrong = await send(s, 'POST', '/auth/nostr-keys', signedOther, body);
  t.is(wrong.statusCode, 401);
  t.is(wrong.body.message, 'payload hash does not match the request body');
  t.regex(String(wrong.headers['www-authenticate']), /^Nostr error="invalid_token", error_description="payload hash does not match/);

  // Same JSON, other bytes: the hash covers the raw body, not its parsed value.
  const spaced = JSON.stringify({ public_key: extra }, null, 1);
  const reformatted = await send(s, 'POST', '/auth/nostr-keys', nostrAuthorization(u.secret, 'POST', `${BASE}/auth/nostr-keys`, body), spaced);
  t.is(reformatted.statusCode, 401);

  const untagged = await send(s, 'POST', '/auth/nostr-keys', nostrAuthorization(u.secret, 'POST', `${BASE}/auth/nostr-keys`), body);
  t.is(untagged.statusCode, 401);
  t.is(untagged.body.message, 'a request with a body must sign its sha256 in a payload tag');

  const getWithHash = signEvent(u.secret, {
    kind: 27235,
    tags: [
      ['u', `${BASE}/auth/me`],
      ['method', 'GET'],
      ['payload', createHash('sha256').update('x').digest('hex')],
    ],
  });
  t.is((await send(s, 'GET', '/auth/me', headerOf(getWithHash))).statusCode, 401);
  t.is(await s.kernel.db('user_nostr_keys').where({ pubkey: extra }).first(), undefined);
});

test('created_at more than 60 s away from the server clock is 401', async (t) => {
  const u = await signer(s, 'stale');
  for (const offset of [-90, 90]) {
    const res = await send(s, 'GET', '/auth/me', nostrAuthorization(u.secret, 'GET', `${BASE}/auth/me`, undefined, now() + offset));
    t.is(res.statusCode, 401);
    t.is(res.body.message, 'event created_at is more than 60 seconds from the server time');
  }
  t.is((await send(s, 'GET', '/auth/me', nostrAuthorization(u.secret, 'GET', `${BASE}/auth/me`, undefined, now() - 30))).statusCode, 200);
});

test('an event is accepted once: a replay is 401', async (t) => {
  const u = await signer(s, 'replay');
  const header = nostrAuthorization(u.secret, 'GET', `${BASE}/auth/me`);
  t.is((await send(s, 'GET', '/auth/me', header)).statusCode, 200);
  const again = await send(s, 'GET', '/auth/me', header);
  t.is(again.statusCode, 401);
  t.is(again.body.message, 'this signed event was already used');
  const seen = await s.kernel.db('nostr_seen_events').count({ n: '*' }).first();
  t.true(Number((seen as { n: string }).n) >= 1);
});

test('another URL, host, query or method is 401', async (t) => {
  const u = await signer(s, 'url');
  const cases: [string, string, string, string?][] = [
    ['GET', '/auth/me', nostrAuthorization(u.secret, 'GET', `${BASE}/auth/nostr-keys`)],
    ['GET', '/auth/me', nostrAuthorization(u.secret, 'GET', `https://${HOST}/auth/me`)],
    ['GET', '/auth/me', nostrAuthorization(u.secret, 'GET', `${BASE}/auth/me`), 'evil.test:8080'],
    ['GET', '/auth/me?x=1', nostrAuthorization(u.secret, 'GET', `${BASE}/auth/me`)],
    ['GET', '/auth/me', nostrAuthorization(u.secret, 'GET', '/auth/me')],
  ];
  for (const [method, path, header, host] of cases) {
    const res = await send(s, method, path, header, undefined, host);
    t.is(res.statusCode, 401, `${path} ${host ?? ''}`);
    t.is(res.body.message, 'event u tag is not the URL of this request');
  }
  const method = await send(s, 'GET', '/auth/me', nostrAuthorization(u.secret, 'POST', `${BASE}/auth/me`));
  t.is(method.statusCode, 401);
  t.is(method.body.message, 'event method tag is not the method of this request');
});

test('a bad signature, another kind, or an unregistered key is 401 invalid_token', async (t) => {
  const u = await signer(s, 'sig');
  const tags = [
    ['u', `${BASE}/auth/me`],
    ['method', 'GET'],
  ];
  const event = signEvent(u.secret, { kind: 27235, tags });
  const forged = { ...event, sig: signEvent(schnorr.utils.randomSecretKey(), { kind: 27235, tags }).sig };
  const bad = await send(s, 'GET', '/auth/me', headerOf(forged));
  t.is(bad.statusCode, 401);
  t.is(bad.body.message, 'event signature does not verify');
  t.is(bad.headers['www-authenticate'], 'Nostr error="invalid_token", error_description="event signature does not verify"');

  const kind = await send(s, 'GET', '/auth/me', headerOf(signEvent(u.secret, { kind: 1, tags })));
  t.is(kind.statusCode, 401);
  t.is(kind.body.message, 'event kind must be 27235');

  const stranger = await send(s, 'GET', '/auth/me', nostrAuthorization(schnorr.utils.randomSecretKey(), 'GET', `${BASE}/auth/me`));
  t.is(stranger.statusCode, 401);
  t.is(stranger.body.message, 'no user has this key');
});

test('a malformed Nostr header is 401 invalid_request; Bearer is unchanged', async (t) => {
  const u = await signer(s, 'malformed');
  const valid = signEvent(u.secret, {
    kind: 27235,
    tags: [
      ['u', `${BASE}/auth/me`],
      ['method', 'GET'],
    ],
  });
  const headers = [
    'Nostr',
    'Nostr not*base64',
    `Nostr ${Buffer.from('not json').toString('base64')}`,
    `Nostr ${Buffer.from('[1,2]').toString('base64')}`,
    headerOf({ ...valid, id: 'abc' }),
    headerOf({ ...valid, created_at: '1' }),
    headerOf({ ...valid, tags: 'u' }),
    `Nostr ${'A'.repeat(20_000)}`,
  ];
  for (const header of headers) {
    const res = await send(s, 'GET', '/auth/me', header);
    t.is(res.statusCode, 401, header.slice(0, 40));
    t.regex(res.body.message, /^malformed authorization header/);
    t.regex(String(res.headers['www-authenticate']), /^Nostr error="invalid_request", error_description="malformed authorization header/);
  }
  t.deepEqual(Object.keys((await send(s, 'GET', '/auth/me', 'Nostr')).body).sort(), ['error', 'message', 'statusCode']);

  const bearer = await as(s.server, u.token).get('/auth/me');
  t.is(bearer.statusCode, 200);
  const missing = await call(s.server, 'GET', '/auth/me');
  t.is(missing.statusCode, 401);
  t.is(missing.headers['www-authenticate'], 'Bearer');
  const junk = await send(s, 'GET', '/auth/me', 'Basic abc');
  t.is(junk.headers['www-authenticate'], 'Bearer error="invalid_request", error_description="malformed authorization header: expected Bearer <token>"');
  const bearerPost = await s.server.inject({
    method: 'POST',
    url: '/auth/nostr-keys',
    payload: { public_key: nostrPublicKey(schnorr.utils.randomSecretKey()) },
    headers: { authorization: `Bearer ${u.token}` },
  });
  t.is(bearerPost.statusCode, 201, 'Bearer requests with a body pass the payload step');
});

test('with server.public_url set, the signed URL is the public one', async (t) => {
  const pub = await startTestServer({ overrides: { server: { public_url: 'https://svc.example.com/api/' } } });
  t.teardown(() => pub.stop());
  const boot = await call(pub.server, 'POST', '/auth/bootstrap', { email: 'root@example.com' });
  const secret = schnorr.utils.randomSecretKey();
  t.is((await as(pub.server, boot.body.access_token).post('/auth/nostr-keys', { public_key: nostrPublicKey(secret) })).statusCode, 201);
  const ok = await send(pub, 'GET', '/auth/me', nostrAuthorization(secret, 'GET', 'https://svc.example.com/api/auth/me'));
  t.is(ok.statusCode, 200, JSON.stringify(ok.body));
  t.is(ok.body.user.email, 'root@example.com');
  const byHost = await send(pub, 'GET', '/auth/me', nostrAuthorization(secret, 'GET', `${BASE}/auth/me`));
  t.is(byHost.statusCode, 401);
});
