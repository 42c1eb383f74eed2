import test from 'ava';
import { createClient, SvcApiError, SvcTransportError, type Schemas } from '../../client/index.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let adminToken: string;
test.before(async () => {
  server = await startTestServer();
  // a public operation: no token sent
  adminToken = (await createClient({ baseUrl: server.url }).POST('/auth/bootstrap', { body: { email: 'admin@example.com' } })).access_token;
});
test.after.always(async () => server?.stop());

test('svc/client calls a real server with typed bodies: create, read, list with a query, update, delete', async (t) => {
  let token: string | undefined = adminToken;
  const svc = createClient({ baseUrl: server.url, token: () => token, timeoutMs: 10_000 });

  const org: Schemas['Org'] = await svc.POST('/orgs', { body: { name: 'Client Org', slug: 'client-org' } });
  t.regex(org.id, /^org_/);
  t.is((await svc.GET('/orgs/{org_id}', { params: { org_id: org.id } })).slug, 'client-org');
  const page = await svc.GET('/orgs', { query: { limit: '1' } });
  t.is(page.data.length, 1, 'the query reached the server as limit=1');
  t.true((page.pagination?.total ?? 0) >= 1);
  t.is((await svc.PATCH('/orgs/{org_id}', { params: { org_id: org.id }, body: { name: 'Renamed' } })).name, 'Renamed');
  t.is(await svc.DELETE('/orgs/{org_id}', { params: { org_id: org.id } }), undefined);

  token = undefined; // the token function is read per request
  t.is((await t.throwsAsync(svc.GET('/auth/me'), { instanceOf: SvcApiError })).status, 401);
});

test('a non-2xx answer throws SvcApiError with its status, code and message; no answer throws SvcTransportError', async (t) => {
  const anonymous = createClient({ baseUrl: server.url });
  const svc = createClient({ baseUrl: server.url, token: adminToken });

  const missing = await t.throwsAsync(svc.GET('/orgs/{org_id}', { params: { org_id: 'org_01h455vb4pex5vsknk084sn02q' } }), { instanceOf: SvcApiError });
  t.is(missing.status, 404);
  t.is(missing.code, 'Not Found');
  t.regex(missing.message, /org/i);
  t.is((missing.body as { statusCode: number }).statusCode, 404);

  const conflict = await t.throwsAsync(
    svc.POST('/orgs', { body: { name: 'Twice', slug: 'twice' } }).then(() => svc.POST('/orgs', { body: { name: 'Twice', slug: 'twice' } })),
    {
      instanceOf: SvcApiError,
    },
  );
  t.is(conflict.status, 409);

  const unauthenticated = await t.throwsAsync(anonymous.GET('/auth/me'), { instanceOf: SvcApiError });
  t.deepEqual([unauthenticated.status, unauthenticated.code], [401, 'Unauthorized']);

  const nowhere = createClient({ baseUrl: 'http://127.0.0.1:9', timeoutMs: 5_000 });
  const failed = await t.throwsAsync(nowhere.GET('/health'), { instanceOf: SvcTransportError });
  t.is(failed.reason, 'unreachable');
  t.is(failed.url.href, 'http://127.0.0.1:9/health');
});

test("mapError turns every failure into the program's own error, answers and transport failures alike", async (t) => {
  class Mine extends Error {}
  const mapError = (e: SvcApiError | SvcTransportError) => new Mine(e instanceof SvcApiError ? `api ${e.status}` : `transport ${e.reason}`);
  const svc = createClient({ baseUrl: server.url, token: adminToken, mapError });
  const missing = await t.throwsAsync(svc.GET('/orgs/{org_id}', { params: { org_id: 'org_01h455vb4pex5vsknk084sn02q' } }), { instanceOf: Mine });
  t.is(missing.message, 'api 404');
  const nowhere = createClient({ baseUrl: 'http://127.0.0.1:9', timeoutMs: 5_000, mapError });
  t.is((await t.throwsAsync(nowhere.request('GET', '/health'), { instanceOf: Mine })).message, 'transport unreachable');
  t.is((await svc.GET('/health')).status, 'ok', 'a success passes through untouched');
});

test('path values are escaped into the template, and a missing one is refused before any request', (t) => {
  const svc = createClient({ baseUrl: 'http://svc.test/prefix/' });
  t.is(
    svc.url('/jobs/{job_id}/files/{name}', { job_id: 'job_1', name: 'a b/c' }, { x: 1, y: undefined }).href,
    'http://svc.test/prefix/jobs/job_1/files/a%20b%2Fc?x=1',
  );
  t.throws(() => svc.url('/jobs/{job_id}'), { message: '/jobs/{job_id}: no value for {job_id}' });
});

// Compile-time checks: `npx tsc --noEmit` fails if the generated types stop refusing these.
export async function refusedAtCompileTime(svc: ReturnType<typeof createClient>): Promise<void> {
  // @ts-expect-error no such path
  await svc.GET('/no-such-path');
  // @ts-expect-error the path needs its parameter
  await svc.GET('/jobs/{job_id}');
  // @ts-expect-error a parameter the path does not have
  await svc.GET('/jobs/{job_id}', { params: { id: 'job_1' } });
  // @ts-expect-error a body of the wrong shape
  await svc.POST('/projects/{project_id}/jobs', { params: { project_id: 'p' }, body: { description: 5 } });
  // @ts-expect-error the answer is a Job, not a number
  const n: number = await svc.GET('/jobs/{job_id}', { params: { job_id: 'job_1' } });
  void n;
}
