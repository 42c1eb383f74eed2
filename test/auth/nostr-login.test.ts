// Nostr-style identity: hex keys on the account (/auth/nostr-keys) and Schnorr challenge-response login
// (/auth/nostr/challenge, /auth/nostr/verify) with real BIP-340 signatures from @noble/curves.
import test from 'ava';
import { schnorr } from '@noble/curves/secp256k1.js';
import { as, call, startTestServer, userInOrg, type TestServer } from '../support/server.ts';
import { MINUTE, within } from './helpers.ts';
import { nostrPublicKey, signEvent } from '../../cli/nostr.ts';
import { UnknownIdentityHandlerToken, type UnknownIdentity } from '../../core/auth/identity-hooks.ts';

let s: TestServer;
let adminToken = '';
let orgId = '';
let counter = 0;

const newKey = () => {
  const secret = schnorr.utils.randomSecretKey();
  return { secret, pubkey: nostrPublicKey(secret) };
};

async function newUser(server: TestServer, prefix: string) {
  const email = `${prefix}${++counter}@example.com`;
  const token = await userInOrg(server.server, adminToken, orgId, email);
  return { email, token, api: as(server.server, token) };
}

async function challenge(server: TestServer, subject: { email: string } | { pubkey: string }) {
  const res = await call(server.server, 'POST', '/auth/nostr/challenge', subject);
  if (res.statusCode !== 200) throw new Error(`challenge: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body as { challenge_id: string; nonce: string; kind: number; expires_at: string };
}

const loginEvent = (secret: Uint8Array, nonce: string, kind = 22242) => signEvent(secret, { kind, content: nonce });

async function login(server: TestServer, subject: { email: string } | { pubkey: string }, secret: Uint8Array) {
  const c = await challenge(server, subject);
  return call(server.server, 'POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: loginEvent(secret, c.nonce) });
}

async function rows(server: TestServer) {
  const out: Record<string, number> = {};
  for (const table of ['users', 'user_keys', 'user_nostr_keys', 'nostr_challenges', 'org_members']) {
    out[table] = Number(((await server.kernel.db(table).count({ n: '*' }).first()) as { n: string }).n);
  }
  out.used_challenges = Number(((await server.kernel.db('nostr_challenges').whereNotNull('used_at').count({ n: '*' }).first()) as { n: string }).n);
  return out;
}

test.before(async () => {
  s = await startTestServer();
  adminToken = (await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' })).body.access_token;
  orgId = (await as(s.server, adminToken).post('/orgs', { name: 'Nostr Org' })).body.id;
});

test.after.always(async () => {
  await s?.stop();
});

test('register a key, then log in by e-mail and by public key; the token works', async (t) => {
  const user = await newUser(s, 'login');
  const key = newKey();
  const t0 = Date.now();
  const reg = await user.api.post('/auth/nostr-keys', { public_key: key.pubkey.toUpperCase(), label: ' phone ' });
  t.is(reg.statusCode, 201, JSON.stringify(reg.body));
  t.deepEqual(Object.keys(reg.body).sort(), ['created_at', 'id', 'label', 'pubkey', 'type']);
  t.regex(reg.body.id, /^key_/);
  t.like(reg.body, { type: 'nostr', pubkey: key.pubkey, label: 'phone' });
  within(t, reg.body.created_at, t0, Date.now());

  const list = await user.api.get('/auth/nostr-keys');
  t.is(list.statusCode, 200);
  t.deepEqual(
    list.body.data.map((k: { id: string }) => k.id),
    [reg.body.id],
  );
  t.is((await user.api.get('/auth/keys')).body.data.length, 0, 'SSH key list is unchanged');

  const c0 = Date.now();
  const c = await challenge(s, { email: user.email.toUpperCase() });
  t.regex(c.challenge_id, /^chl_/);
  t.is(c.kind, 22242);
  t.true(c.nonce.length >= 32);
  within(t, c.expires_at, c0 + 5 * MINUTE, Date.now() + 5 * MINUTE);
  const res = await call(s.server, 'POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: loginEvent(key.secret, c.nonce), ttl_days: 3 });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.is(res.body.token_type, 'Bearer');
  t.like(res.body.user, { email: user.email, is_admin: false });
  within(t, res.body.expires_at, c0 + 3 * 86_400_000, Date.now() + 3 * 86_400_000);
  const me = await as(s.server, res.body.access_token).get('/auth/me');
  t.is(me.statusCode, 200);
  t.is(me.body.user.email, user.email);
  t.is(me.body.token.scope, null);

  const byKey = await login(s, { pubkey: key.pubkey }, key.secret);
  t.is(byKey.statusCode, 200, JSON.stringify(byKey.body));
  t.is(byKey.body.user.email, user.email);
});

test('a challenge is single-use, also after a failed verify', async (t) => {
  const user = await newUser(s, 'reuse');
  const key = newKey();
  t.is((await user.api.post('/auth/nostr-keys', { public_key: key.pubkey })).statusCode, 201);
  const c = await challenge(s, { email: user.email });
  const event = loginEvent(key.secret, c.nonce);
  t.is((await call(s.server, 'POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event })).statusCode, 200);
  const again = await call(s.server, 'POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event });
  t.is(again.statusCode, 401);
  t.is(again.body.message, 'challenge unknown or already used');

  const c2 = await challenge(s, { email: user.email });
  const bad = await call(s.server, 'POST', '/auth/nostr/verify', { challenge_id: c2.challenge_id, event: loginEvent(newKey().secret, c2.nonce) });
  t.is(bad.statusCode, 401);
  const retry = await call(s.server, 'POST', '/auth/nostr/verify', { challenge_id: c2.challenge_id, event: loginEvent(key.secret, c2.nonce) });
  t.is(retry.statusCode, 401);
  t.is(retry.body.message, 'challenge unknown or already used');
});

test('a wrong signature, a tampered event, another kind or another nonce is 401', async (t) => {
  const user = await newUser(s, 'sig');
  const key = newKey();
  t.is((await user.api.post('/auth/nostr-keys', { public_key: key.pubkey })).statusCode, 201);
  const verify = async (make: (nonce: string) => object) => {
    const c = await challenge(s, { email: user.email });
    return call(s.server, 'POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: make(c.nonce) });
  };

  const wrongSig = await verify((nonce) => {
    const event = loginEvent(key.secret, nonce);
    const other = signEvent(newKey().secret, { kind: 22242, content: nonce });
    return { ...event, sig: other.sig };
  });
  t.is(wrongSig.statusCode, 401);
  t.is(wrongSig.body.message, 'signature rejected: event signature does not verify');

  const tampered = await verify((nonce) => ({ ...loginEvent(key.secret, nonce), created_at: 1 }));
  t.is(tampered.statusCode, 401);
  t.is(tampered.body.message, 'signature rejected: event id is not the hash of the event');

  const kind = await verify((nonce) => loginEvent(key.secret, nonce, 1));
  t.is(kind.statusCode, 401);
  t.is(kind.body.message, 'signature rejected: event kind must be 22242');

  const nonce = await verify(() => loginEvent(key.secret, 'another nonce'));
  t.is(nonce.statusCode, 401);
  t.is(nonce.body.message, 'signature rejected: event content is not the challenge nonce');

  const c = await challenge(s, { pubkey: key.pubkey });
  const otherKey = newKey();
  const wrongKey = await call(s.server, 'POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: loginEvent(otherKey.secret, c.nonce) });
  t.is(wrongKey.statusCode, 401);
  t.is(wrongKey.body.message, 'signature rejected: event pubkey is not the challenged key');
});

test('an expired challenge is 401', async (t) => {
  const user = await newUser(s, 'expired');
  const key = newKey();
  t.is((await user.api.post('/auth/nostr-keys', { public_key: key.pubkey })).statusCode, 201);
  const c = await challenge(s, { email: user.email });
  await s.kernel
    .db('nostr_challenges')
    .where({ id: c.challenge_id })
    .update({ expires_at: new Date(Date.now() - 1000) });
  const res = await call(s.server, 'POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: loginEvent(key.secret, c.nonce) });
  t.is(res.statusCode, 401);
  t.is(res.body.message, 'challenge expired');
});

test("an unregistered key, or another account's key, logs nobody in", async (t) => {
  const stranger = newKey();
  const byKey = await login(s, { pubkey: stranger.pubkey }, stranger.secret);
  t.is(byKey.statusCode, 401);
  t.is(byKey.body.message, 'no user has this key');

  const user = await newUser(s, 'cross');
  const byEmail = await login(s, { email: user.email }, stranger.secret);
  t.is(byEmail.statusCode, 401);
  t.is(byEmail.body.message, 'no user has this key');

  const other = await newUser(s, 'other');
  const otherKey = newKey();
  t.is((await other.api.post('/auth/nostr-keys', { public_key: otherKey.pubkey })).statusCode, 201);
  const cross = await login(s, { email: user.email }, otherKey.secret);
  t.is(cross.statusCode, 401);
  t.is(cross.body.message, `no nostr key ${otherKey.pubkey} is registered for ${user.email}`);

  const nobody = await login(s, { email: 'nobody@example.com' }, otherKey.secret);
  t.is(nobody.statusCode, 401);
});

test('a key belongs to one account; removing it stops its logins', async (t) => {
  const a = await newUser(s, 'dupa');
  const b = await newUser(s, 'dupb');
  const key = newKey();
  const reg = await a.api.post('/auth/nostr-keys', { public_key: key.pubkey });
  t.is(reg.statusCode, 201);
  const dup = await b.api.post('/auth/nostr-keys', { public_key: key.pubkey });
  t.is(dup.statusCode, 409);
  t.is(dup.body.message, `nostr key ${key.pubkey} is already registered`);
  t.is((await b.api.delete(`/auth/nostr-keys/${reg.body.id}`)).statusCode, 404, 'not your key');
  t.is((await a.api.delete(`/auth/nostr-keys/${reg.body.id}`)).statusCode, 204);
  t.is((await login(s, { email: a.email }, key.secret)).statusCode, 401);
});

test.serial('bad input is 400 and writes nothing (a 400 verify does not consume the challenge)', async (t) => {
  const user = await newUser(s, 'bad');
  const key = newKey();
  t.is((await user.api.post('/auth/nostr-keys', { public_key: key.pubkey })).statusCode, 201);
  const c = await challenge(s, { email: user.email });
  const before = await rows(s);
  const good = loginEvent(key.secret, c.nonce);
  const cases: [string, string, unknown, string?][] = [
    ['POST', '/auth/nostr-keys', { public_key: 'abc' }, user.token],
    ['POST', '/auth/nostr-keys', { public_key: 'g'.repeat(64) }, user.token],
    ['POST', '/auth/nostr-keys', { public_key: `npub1${'q'.repeat(59)}` }, user.token],
    ['POST', '/auth/nostr-keys', { public_key: '0'.repeat(63) + '5' }, user.token], // not on the curve
    ['POST', '/auth/nostr-keys', { public_key: key.pubkey, extra: 1 }, user.token],
    ['POST', '/auth/nostr-keys', {}, user.token],
    ['DELETE', '/auth/nostr-keys/nope', undefined, user.token],
    ['GET', '/auth/nostr-keys?limit=0', undefined, user.token],
    ['POST', '/auth/nostr/challenge', {}],
    ['POST', '/auth/nostr/challenge', { email: user.email, pubkey: key.pubkey }],
    ['POST', '/auth/nostr/challenge', { email: 'not-an-email' }],
    ['POST', '/auth/nostr/challenge', { pubkey: key.pubkey.slice(1) }],
    ['POST', '/auth/nostr/verify', { challenge_id: c.challenge_id }],
    ['POST', '/auth/nostr/verify', { challenge_id: 'chl_x', event: good }],
    ['POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: { ...good, sig: 'zz' } }],
    ['POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: { ...good, id: good.id.toUpperCase() } }],
    ['POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: { ...good, created_at: String(good.created_at) } }],
    ['POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: { ...good, tags: [[1]] } }],
    ['POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: { ...good, kind: -1 } }],
    ['POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: good, ttl_days: 91 }],
    ['POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: { ...good, extra: true } }],
  ];
  for (const [method, url, body, token] of cases) {
    const res = await call(s.server, method, url, body, token);
    t.is(res.statusCode, 400, `${method} ${url} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
  }
  t.deepEqual(await rows(s), before);
  const ok = await call(s.server, 'POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: good });
  t.is(ok.statusCode, 200, 'the challenge survived the 400s');
});

test('a scoped token cannot manage nostr keys', async (t) => {
  const email = `scoped${++counter}@example.com`;
  const minted = await as(s.server, adminToken).post('/auth/mint', { email, org_id: orgId });
  t.is(minted.statusCode, 201);
  const res = await as(s.server, minted.body.access_token).post('/auth/nostr-keys', { public_key: newKey().pubkey });
  t.is(res.statusCode, 403);
});

test('an unknown key that completes a challenge asks the registered UnknownIdentityHandler', async (t) => {
  const seen: UnknownIdentity[] = [];
  let grantTo: string | null = null;
  const hooked = await startTestServer({
    configure: (c) =>
      c.registerInstance(UnknownIdentityHandlerToken, {
        onUnknownIdentity: async (identity) => {
          seen.push(identity);
          return grantTo ? { userId: grantTo } : null;
        },
      }),
  });
  t.teardown(() => hooked.stop());
  const boot = await call(hooked.server, 'POST', '/auth/bootstrap', { email: 'root@example.com' });
  const key = newKey();

  const refused = await login(hooked, { pubkey: key.pubkey }, key.secret);
  t.is(refused.statusCode, 401);
  t.is(refused.body.message, 'no user has this key');
  t.deepEqual(seen, [{ kind: 'nostr', publicKey: key.pubkey }]);

  // A bad signature never reaches the handler.
  const c = await challenge(hooked, { pubkey: key.pubkey });
  const forged = { ...loginEvent(key.secret, c.nonce), sig: loginEvent(newKey().secret, c.nonce).sig };
  t.is((await call(hooked.server, 'POST', '/auth/nostr/verify', { challenge_id: c.challenge_id, event: forged })).statusCode, 401);
  t.is(seen.length, 1);

  grantTo = boot.body.user.id;
  const granted = await login(hooked, { pubkey: key.pubkey }, key.secret);
  t.is(granted.statusCode, 200, JSON.stringify(granted.body));
  t.is(granted.body.user.email, 'root@example.com');
  t.is(seen.length, 2);
  const stored = await hooked.kernel.db('user_nostr_keys').where({ pubkey: key.pubkey }).first();
  t.is(stored.user_id, boot.body.user.id, 'the key is registered to the granted user');
  t.is((await login(hooked, { pubkey: key.pubkey }, key.secret)).statusCode, 200);
  t.is(seen.length, 2, 'a registered key does not ask again');
});
