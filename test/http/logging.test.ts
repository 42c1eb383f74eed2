import test from 'ava';
import { Writable } from 'node:stream';
import { createLogger } from '../../core/logger.ts';
import { as, bootstrapAdmin, call, startTestServer } from '../support/server.ts';

test('request logs: one JSON line per request with its id; tokens and bootstrap secrets never appear', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(...String(chunk).split('\n').filter(Boolean)), done()) });
  const bootstrapToken = 'bootstrap-secret-value-123';
  const s = await startTestServer({ logger: createLogger('info', sink), env: { SVC_BOOTSTRAP_TOKEN: bootstrapToken } });
  try {
    const boot = await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com', token: bootstrapToken });
    t.is(boot.statusCode, 201);
    const token = boot.body.access_token as string;
    const me = await as(s.server, token).get('/auth/me');
    t.is(me.statusCode, 200);
    await as(s.server, 'not.a-valid.token').get('/auth/me');

    const all = lines.join('\n');
    t.false(all.includes(token), `the access token is not logged: ${lines.filter((l) => l.includes(token)).join('\n')}`);
    t.false(all.includes(bootstrapToken), 'the bootstrap token is not logged');
    t.false(all.includes('not.a-valid.token'), 'a rejected token is not logged either');
    const requestLines = lines.map((l) => JSON.parse(l)).filter((l) => l.req?.url === '/auth/me');
    t.is(requestLines.length, 2);
    for (const line of requestLines) {
      t.truthy(line.req.id, 'each request line carries the request id');
      t.is(line.req.headers.authorization, '[redacted]');
    }
    t.is(me.headers['x-request-id'], requestLines[0].req.id);
  } finally {
    await s.stop();
  }
});

test('the admin created by bootstrap can be used right away (helper sanity)', async (t) => {
  const s = await startTestServer();
  try {
    const { token } = await bootstrapAdmin(s.server);
    t.is((await as(s.server, token).get('/orgs')).statusCode, 200);
  } finally {
    await s.stop();
  }
});

test('below info a request writes no line; a failing request writes one error line with its request id and method', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(...String(chunk).split('\n').filter(Boolean)), done()) });
  const s = await startTestServer({ logger: createLogger('warn', sink) });
  try {
    const { token } = await bootstrapAdmin(s.server);
    const before = lines.length;
    t.is((await as(s.server, token).get('/orgs')).statusCode, 200);
    t.is(lines.length, before, `no line for an answered request: ${lines.slice(before).join('\n')}`);

    s.server.route({
      method: 'GET',
      path: '/test/fails',
      options: { auth: false },
      handler: () => {
        throw new Error('the handler broke');
      },
    });
    const failed = await call(s.server, 'GET', '/test/fails');
    t.is(failed.statusCode, 500);
    const errors = lines
      .slice(before)
      .map((l) => JSON.parse(l))
      .filter((l) => l.level === 50);
    t.true(errors.length >= 1, `an error line: ${lines.slice(before).join('\n')}`);
    t.is(errors[0].req.id, failed.headers['x-request-id']);
    t.is(errors[0].req.method, 'get');
    t.is(errors[0].req.url, '/test/fails');
    t.regex(JSON.stringify(errors), /the handler broke/);
  } finally {
    await s.stop();
  }
});
