import test from 'ava';
import { as, bootstrapAdmin, call, startTestServer, type TestServer } from '../support/server.ts';

/** The console plugin: its page and bundles, the session cookie (with CSRF header) and one-time login links. */
let s: TestServer;
let token = '';
test.before(async () => {
  s = await startTestServer();
  token = (await bootstrapAdmin(s.server)).token;
});
test.after.always(async () => {
  await s?.stop();
});

const cookieOf = (headers: Record<string, unknown>) => String([headers['set-cookie']].flat()[0] ?? '');
const sessionCookie = (headers: Record<string, unknown>) => cookieOf(headers).split(';')[0];

test('the page at / and at deep links has a strict CSP and no inline script; bundles are immutable; API 404s stay JSON', async (t) => {
  for (const url of ['/', '/console/jobs/webapp-0000abcd', '/console/projects/x/runs/y']) {
    const res = await s.server.inject(url);
    t.is(res.statusCode, 200, url);
    t.regex(String(res.headers['content-type']), /text\/html/);
    t.regex(String(res.headers['content-security-policy']), /script-src 'self'/);
    t.notRegex(String(res.headers['content-security-policy']), /unsafe-inline/);
    t.is(res.headers['cache-control'], 'no-cache');
    t.notRegex(res.payload, /<script>|<script(?![^>]*\bsrc=)[^>]*>/);
  }
  const page = (await s.server.inject('/')).payload;
  const script = /src="(\/console\/assets\/app-[A-Z0-9]+\.js)"/.exec(page)![1];
  const bundle = await s.server.inject(script);
  t.is(bundle.statusCode, 200);
  t.regex(String(bundle.headers['content-type']), /javascript/);
  t.regex(String(bundle.headers['cache-control']), /immutable/);
  const missing = await call(s.server, 'GET', '/console/assets/nope.js');
  t.is(missing.statusCode, 404);
  const api404 = await call(s.server, 'GET', '/no/such/api/path');
  t.is(api404.statusCode, 404);
  t.is(api404.body.error, 'Not Found');
});

test('a pasted token becomes an HttpOnly SameSite=Strict cookie that authenticates reads, and writes with the CSRF header only', async (t) => {
  const noHeader = await s.server.inject({ method: 'POST', url: '/auth/console/session', payload: { token } });
  t.is(noHeader.statusCode, 403);
  t.regex(JSON.parse(noHeader.payload).message, /x-svc-csrf/);
  t.falsy(noHeader.headers['set-cookie']);

  const bad = await s.server.inject({ method: 'POST', url: '/auth/console/session', payload: { token: 'a.b.c' }, headers: { 'x-svc-csrf': '1' } });
  t.is(bad.statusCode, 401);
  const both = await s.server.inject({ method: 'POST', url: '/auth/console/session', payload: { token, code: 'x' }, headers: { 'x-svc-csrf': '1' } });
  t.is(both.statusCode, 400);

  const res = await s.server.inject({ method: 'POST', url: '/auth/console/session', payload: { token }, headers: { 'x-svc-csrf': '1' } });
  t.is(res.statusCode, 200);
  const cookie = cookieOf(res.headers);
  t.regex(cookie, /^svc_session=/);
  t.regex(cookie, /HttpOnly/);
  t.regex(cookie, /SameSite=Strict/);
  t.notRegex(res.payload, new RegExp(token.slice(-20)));

  const me = await s.server.inject({ url: '/auth/me', headers: { cookie: sessionCookie(res.headers) } });
  t.is(me.statusCode, 200);
  t.is(JSON.parse(me.payload).user.email, 'admin@example.com');

  const forged = await s.server.inject({ method: 'POST', url: '/orgs', payload: { name: 'Forged' }, headers: { cookie: sessionCookie(res.headers) } });
  t.is(forged.statusCode, 403);
  t.regex(JSON.parse(forged.payload).message, /x-svc-csrf/);
  const written = await s.server.inject({
    method: 'POST',
    url: '/orgs',
    payload: { name: 'By cookie' },
    headers: { cookie: sessionCookie(res.headers), 'x-svc-csrf': '1' },
  });
  t.is(written.statusCode, 201);

  const out = await s.server.inject({ method: 'DELETE', url: '/auth/console/session', headers: { cookie: sessionCookie(res.headers), 'x-svc-csrf': '1' } });
  t.is(out.statusCode, 204);
  t.regex(cookieOf(out.headers), /svc_session=;.*Max-Age=0/);
});

test('a login link works once, for the caller, and only for user tokens', async (t) => {
  const anonymous = await call(s.server, 'POST', '/auth/console/links');
  t.is(anonymous.statusCode, 401);
  const link = await as(s.server, token).post('/auth/console/links');
  t.is(link.statusCode, 201);
  t.regex(link.body.url, /\/console\/login#code=[A-Za-z0-9_-]{43}$/);
  t.true(Date.parse(link.body.expires_at) - Date.now() <= 60_000);
  const code = link.body.url.split('#code=')[1];

  const first = await s.server.inject({ method: 'POST', url: '/auth/console/session', payload: { code }, headers: { 'x-svc-csrf': '1' } });
  t.is(first.statusCode, 200);
  t.is(JSON.parse(first.payload).email, 'admin@example.com');
  const me = await s.server.inject({ url: '/auth/me', headers: { cookie: sessionCookie(first.headers) } });
  t.is(me.statusCode, 200);
  t.true(Date.parse(JSON.parse(me.payload).token.expires_at) <= Date.parse((await as(s.server, token).get('/auth/me')).body.token.expires_at));

  const again = await s.server.inject({ method: 'POST', url: '/auth/console/session', payload: { code }, headers: { 'x-svc-csrf': '1' } });
  t.is(again.statusCode, 401);
  t.regex(JSON.parse(again.payload).message, /unknown, used or expired/);
});

test('the console routes are in the OpenAPI document; the page routes are not', async (t) => {
  const doc = (await call(s.server, 'GET', '/openapi.json')).body;
  t.truthy(doc.paths['/auth/console/session'].post);
  t.truthy(doc.paths['/auth/console/links'].post);
  t.falsy(doc.paths['/']);
  t.falsy(doc.paths['/console/{path*}']);
});
