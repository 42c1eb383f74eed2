import test from 'ava';
import Hapi from '@hapi/hapi';
import { Conflict, DomainError, Invalid, LeaseLost, NotFound, SecretMissing } from '../../core/errors.ts';

test('a domain error keeps its class and fields, and has the HTTP form of its kind', (t) => {
  const missing = new SecretMissing('GIT_TOKEN', ['project prj_1', 'system']);
  t.true(missing instanceof SecretMissing && missing instanceof DomainError);
  t.is(missing.secret, 'GIT_TOKEN');
  t.deepEqual(missing.searched, ['project prj_1', 'system']);
  t.is(missing.message, 'secret GIT_TOKEN not found; searched project prj_1, system');
  t.is(missing.output.statusCode, 422);
  t.is(new NotFound('x').output.statusCode, 404);
  t.is(new Invalid('x').output.statusCode, 422);
  t.is(new LeaseLost('lease lost: x').output.statusCode, 409);
  t.is(new LeaseLost('attempt a of job j not found', { gone: true }).output.statusCode, 404);
  t.true(new LeaseLost('x', { gone: true }) instanceof LeaseLost);
});

test('a route that throws one answers with its status, message and details', async (t) => {
  const server = Hapi.server();
  server.route({
    method: 'GET',
    path: '/held',
    handler: () => {
      throw new Conflict('gates held: a', { blocked_on_gates: ['a'], jobId: 'j-1' });
    },
  });
  server.route({
    method: 'GET',
    path: '/gone',
    handler: () => {
      throw new NotFound('job j-2 not found');
    },
  });
  const held = await server.inject('/held');
  t.is(held.statusCode, 409);
  t.deepEqual(JSON.parse(held.payload), { statusCode: 409, error: 'Conflict', message: 'gates held: a', blocked_on_gates: ['a'], jobId: 'j-1' });
  const gone = await server.inject('/gone');
  t.deepEqual(JSON.parse(gone.payload), { statusCode: 404, error: 'Not Found', message: 'job j-2 not found' });
});
