import test from 'ava';
import { bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

let s: TestServer;
let token = '';

test.before(async () => {
  s = await startTestServer();
  token = (await bootstrapAdmin(s.server)).token;
});
test.after.always(() => s?.stop());

test("a JSON body sent as a form (curl -d's default type) is 415 naming the type to use, and creates nothing", async (t) => {
  const before = await s.kernel.db('orgs').count<{ count: string }[]>('* as count');
  const res = await s.server.inject({
    method: 'POST',
    url: '/orgs',
    payload: '{"name":"Acme"}',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.is(res.statusCode, 415);
  t.deepEqual(JSON.parse(res.payload), {
    statusCode: 415,
    error: 'Unsupported Media Type',
    message: 'expected application/json, got application/x-www-form-urlencoded: send the body with content-type: application/json',
  });
  t.deepEqual(await s.kernel.db('orgs').count<{ count: string }[]>('* as count'), before);

  const json = await s.server.inject({ method: 'POST', url: '/orgs', payload: { name: 'Acme' }, headers: { authorization: `Bearer ${token}` } });
  t.is(json.statusCode, 201, 'the same body as JSON works');
});
