import test from 'ava';
import { Writable } from 'node:stream';
import { createLogger } from '../../core/logger.ts';
import { as, bootstrapAdmin, call, startTestServer } from '../support/server.ts';
import { secretValue } from './helpers.ts';

test('secret values never reach a log line, whatever the request does', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(...String(chunk).split('\n').filter(Boolean)), done()) });
  const s = await startTestServer({ logger: createLogger('debug', sink) });
  try {
    const { token, userId } = await bootstrapAdmin(s.server);
    const admin = as(s.server, token);
    const values: string[] = [];
    const v = (label: string) => (values.push(secretValue(label)), values.at(-1)!);
    const org = (await admin.post('/orgs', { name: 'Logged' })).body.id;
    for (const base of [`/orgs/${org}/secrets`, `/users/${userId}/secrets`, '/system/secrets']) {
      t.is((await admin.post(base, { name: 'LOGGED', value: v('ok') })).statusCode, 201);
      t.is((await admin.post(base, { name: 'LOGGED', value: v('dup') })).statusCode, 409);
      t.is((await admin.post(base, { name: 'bad name', value: v('bad') })).statusCode, 400);
      t.is((await admin.post(base, { name: 'BAD_TYPE', value: v('type'), type: 'nope' })).statusCode, 400);
      t.is((await call(s.server, 'PUT', `${base}/LOGGED`, { value: v('put') }, token)).statusCode, 200);
      t.is((await call(s.server, 'PUT', `${base}/MISSING`, { value: v('missing') }, token)).statusCode, 404);
      t.is((await call(s.server, 'PUT', `${base}/LOGGED`, { value: v('extra'), extra: v('extra2') }, token)).statusCode, 400);
      t.is((await admin.get(base)).statusCode, 200);
    }
    t.true(
      lines.some((l) => l.includes('/secrets')),
      'requests were logged',
    );
    const all = lines.join('\n');
    for (const value of values) t.false(all.includes(value), `logged: ${lines.filter((l) => l.includes(value)).join('\n')}`);
  } finally {
    await s.stop();
  }
});
