import test from 'ava';
import { bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

/** auth.session_cookie_domain: the session cookie is host-only by default; a root domain shares it with the hosts under it. */
const servers: TestServer[] = [];
test.after.always(async () => {
  for (const s of servers) await s.stop();
});

const cookieOf = (headers: Record<string, unknown>) => String([headers['set-cookie']].flat()[0] ?? '');

async function signIn(overrides: Record<string, unknown>) {
  const s = await startTestServer({ overrides });
  servers.push(s);
  const { token } = await bootstrapAdmin(s.server);
  const res = await s.server.inject({ method: 'POST', url: '/auth/console/session', payload: { token }, headers: { 'x-svc-csrf': '1' } });
  const cookie = cookieOf(res.headers).split(';')[0];
  const probe = (headers: Record<string, string>) => s.server.inject({ url: '/session', headers });
  const probed = { anonymous: await probe({}), withCookie: await probe({ cookie, origin: 'https://shop.example.test' }) };
  const out = await s.server.inject({ method: 'DELETE', url: '/auth/console/session', headers: { cookie, 'x-svc-csrf': '1' } });
  return { res, out, token, cookie, probe, probed };
}

test('by default the session cookie is host-only (no Domain attribute) and GET /session is off', async (t) => {
  const { res, probed } = await signIn({});
  t.is(res.statusCode, 200);
  t.regex(cookieOf(res.headers), /^svc_session=/);
  t.notRegex(cookieOf(res.headers), /Domain=/i);
  t.is(probed.withCookie.statusCode, 404);
  t.regex(JSON.parse(probed.withCookie.payload).message, /auth\.session_cookie_domain/);
  t.falsy(probed.withCookie.headers['access-control-allow-origin']);
});

test('with a root domain, GET /session hands the cookie session to pages on that domain (CORS with credentials), 401 without one', async (t) => {
  const { token, probe, probed } = await signIn({ server: { public_url: 'https://sso.example.test' }, auth: { session_cookie_domain: 'example.test' } });
  t.is(probed.anonymous.statusCode, 401);
  t.is(probed.withCookie.statusCode, 200, probed.withCookie.payload);
  const body = JSON.parse(probed.withCookie.payload);
  t.like(body, { access_token: token, token_type: 'Bearer', user: { email: 'admin@example.com' } });
  t.is(probed.withCookie.headers['access-control-allow-origin'], 'https://shop.example.test');
  t.is(probed.withCookie.headers['access-control-allow-credentials'], 'true');
  t.is(probed.withCookie.headers['cache-control'], 'no-store');
  const noSession = await probe({ origin: 'https://shop.example.test' });
  t.is(noSession.statusCode, 401);
  t.is(noSession.headers['access-control-allow-origin'], 'https://shop.example.test', 'the page can read the 401');
  const bad = await probe({ cookie: 'svc_session=a.b.c', origin: 'https://shop.example.test' });
  t.is(bad.statusCode, 401);
  for (const origin of ['https://evil.test', 'http://shop.example.test', 'https://example.test.evil.test']) {
    const elsewhere = await probe({ cookie: `svc_session=${token}`, origin });
    t.falsy(elsewhere.headers['access-control-allow-origin'], origin);
  }
});

test('with a root domain the cookie carries it, set and cleared alike, and stays HttpOnly, Secure, SameSite=Strict', async (t) => {
  const { res, out } = await signIn({ server: { public_url: 'https://sso.example.test' }, auth: { session_cookie_domain: 'example.test' } });
  t.is(res.statusCode, 200);
  const cookie = cookieOf(res.headers);
  t.regex(cookie, /; Domain=example\.test(;|$)/);
  for (const flag of [/HttpOnly/, /Secure/, /SameSite=Strict/]) t.regex(cookie, flag);
  t.is(out.statusCode, 204);
  t.regex(cookieOf(out.headers), /svc_session=;.*Max-Age=0.*Domain=example\.test/);
});

test('a domain that does not contain the public URL host, or a bare suffix, stops the boot naming the key', async (t) => {
  const other = await t.throwsAsync(() =>
    startTestServer({ overrides: { server: { public_url: 'https://sso.example.test' }, auth: { session_cookie_domain: 'other.test' } } }),
  );
  t.regex(other!.message, /auth\.session_cookie_domain other\.test does not contain server\.public_url's host sso\.example\.test/);
  const suffix = await t.throwsAsync(() => startTestServer({ overrides: { auth: { session_cookie_domain: 'com' } } }));
  t.regex(suffix!.message, /session_cookie_domain/);
});
