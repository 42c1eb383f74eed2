import test from 'ava';
import { as, bootstrapAdmin, startTestServer } from '../support/server.ts';

test('the bench routes exist only when server.bench_routes is on', async (t) => {
  const s = await startTestServer();
  t.teardown(() => s.stop());
  const { token } = await bootstrapAdmin(s.server);
  t.is((await as(s.server, token).get('/bench/bare')).statusCode, 404);
  t.is((await as(s.server).get('/bench/public')).statusCode, 404);
});

test('with server.bench_routes on: /bench/bare takes the bearer scheme, /bench/public no credentials; neither is documented', async (t) => {
  const s = await startTestServer({ overrides: { server: { bench_routes: true } } });
  t.teardown(() => s.stop());
  const { token } = await bootstrapAdmin(s.server);
  const bare = await as(s.server, token).get('/bench/bare');
  t.is(bare.statusCode, 200);
  t.deepEqual(bare.body, { ok: true });
  t.is((await as(s.server).get('/bench/bare')).statusCode, 401);
  t.is((await as(s.server, `${token}x`).get('/bench/bare')).statusCode, 401);
  const pub = await as(s.server).get('/bench/public');
  t.is(pub.statusCode, 200);
  t.deepEqual(pub.body, { ok: true });
  const paths = Object.keys((await as(s.server).get('/openapi.json')).body.paths);
  t.false(paths.some((p) => p.startsWith('/bench')));
});
