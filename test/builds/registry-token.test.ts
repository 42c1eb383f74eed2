import test from 'ava';
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { decodeJwt, decodeProtectedHeader, importSPKI, jwtVerify } from 'jose';
import { libtrustKeyId, parseScopes } from '../../plugins/builds/registry-tokens.ts';
import { buildWorld, type BuildWorld } from './helpers.ts';

const KEY = 'internal-key-0123456789abcdef';
let w: BuildWorld;
let projectId: string;
let slug: string;

test.before(async () => {
  w = await buildWorld({ overrides: { builds: { internal_api_key: KEY, native_registry: '127.0.0.1:5999' } } });
  projectId = await w.project();
  slug = (await w.admin.get(`/projects/${projectId}`)).body.slug;
});
test.after.always(() => w?.s.stop());

const internal = (body: unknown, key = KEY) =>
  w.s.server.inject({ method: 'POST', url: '/internal/registry/token', payload: body as object, headers: { authorization: `Bearer ${key}` } });
const tokenFor = (password: string | null, scope: string) =>
  w.s.server.inject({
    method: 'GET',
    url: `/registry/token?service=svc-registry&scope=${encodeURIComponent(scope)}`,
    headers: password === null ? {} : { authorization: `Basic ${Buffer.from(`svc-grant:${password}`).toString('base64')}` },
  });

test('the libtrust key id is 12 groups of 4 base32 characters of the key fingerprint', (t) => {
  const pem = readFileSync(path.join(w.s.dataDir, 'registry-token-key.pem'));
  t.regex(libtrustKeyId(createPublicKey(pem)), /^([A-Z2-7]{4}:){11}[A-Z2-7]{4}$/);
  t.deepEqual(parseScopes(['repository:a/b:pull,push', 'registry:catalog:*', 'repository:x/y:delete']), [
    { name: 'a/b', actions: ['pull', 'push'] },
    { name: 'x/y', actions: [] },
  ]);
});

test('POST /internal/registry/token needs SVC_INTERNAL_API_KEY; answers a JWT scoped to the repository', async (t) => {
  t.is((await internal({ project_id: projectId, service: 'api' }, 'wrong-key-0123456789')).statusCode, 401);
  t.is((await internal({ project_id: projectId, service: 'api' }, KEY.slice(0, -1))).statusCode, 401);
  const res = await internal({ project_id: projectId, service: 'api' });
  t.is(res.statusCode, 200, res.payload);
  const body = JSON.parse(res.payload);
  t.like(body, { repository: `${slug}/api`, registry: '127.0.0.1:5999', username: 'svc-grant' });
  const header = decodeProtectedHeader(body.token);
  t.is(header.alg, 'ES256');
  const pem = readFileSync(path.join(w.s.dataDir, 'registry-token-key.pem'));
  t.is(header.kid, libtrustKeyId(createPublicKey(pem)));
  const spki = createPublicKey(pem).export({ type: 'spki', format: 'pem' }).toString();
  const { payload } = await jwtVerify(body.token, await importSPKI(spki, 'ES256'), { issuer: 'svc', audience: 'svc-registry' });
  t.deepEqual(payload.access, [{ type: 'repository', name: `${slug}/api`, actions: ['pull', 'push'] }]);
  t.true(payload.exp! - payload.iat! <= 300);
  t.truthy(payload.jti && payload.nbf);
  t.is((await internal({ project_id: projectId, service: 'api', colour: 1 })).statusCode, 400);
  t.is((await internal({ project_id: 'proj_01h455vb4pex5vsknk084sn02q', service: 'api' })).statusCode, 404);
});

test("the Docker token endpoint grants the grant's own repositories and nothing of another project's", async (t) => {
  const grant = JSON.parse((await internal({ project_id: projectId, service: 'api' })).payload).password;
  const own = await tokenFor(grant, `repository:${slug}/web:pull,push`);
  t.is(own.statusCode, 200, own.payload);
  t.deepEqual(decodeJwt(JSON.parse(own.payload).token).access, [{ type: 'repository', name: `${slug}/web`, actions: ['pull', 'push'] }]);
  const other = await tokenFor(grant, 'repository:zzzz/api:pull,push');
  t.is(other.statusCode, 200);
  t.deepEqual(decodeJwt(JSON.parse(other.payload).token).access, [{ type: 'repository', name: 'zzzz/api', actions: [] }]);
  t.is((await tokenFor(null, `repository:${slug}/web:pull`)).statusCode, 401);
  t.is((await tokenFor('not-a-grant', `repository:${slug}/web:pull`)).statusCode, 401);
  const wrongService = await w.s.server.inject({
    method: 'GET',
    url: '/registry/token?service=other',
    headers: { authorization: `Basic ${Buffer.from(`x:${grant}`).toString('base64')}` },
  });
  t.is(wrongService.statusCode, 401);
});
