import test, { type ExecutionContext } from 'ava';
import { as, call, type Reply } from '../support/server.ts';
import { assertError, assertPage, memberOf, missingProjectId, newUser, rows, setup, ISO, type Ctx } from '../orgs/helpers.ts';
import { SECRET_FIELDS, assertNoValues, put, secretValue } from './helpers.ts';

let ctx: Ctx;
let orgId: string;
let projectId: string;
const seen: Reply[] = [];
const values: string[] = [];

test.before(async () => {
  ctx = await setup();
  const admin = as(ctx.srv.server, ctx.adminToken);
  orgId = (await admin.post('/orgs', { name: 'Secret Org' })).body.id;
  projectId = (await admin.post('/projects', { org_id: orgId, name: 'Secret project', slug: 'secrp' })).body.id;
});
test.after.always(async () => {
  await ctx?.srv.stop();
});

/** Every reply any test here got, checked at the end for every value any test wrote. */
const record = (r: Reply) => (seen.push(r), r);
const remember = (v: string) => (values.push(v), v);

const scopes = () => [
  { scope: 'project', base: `/projects/${projectId}/secrets` },
  { scope: 'org', base: `/orgs/${orgId}/secrets` },
  { scope: 'user', base: `/users/${ctx.adminId}/secrets` },
  { scope: 'system', base: '/system/secrets' },
];

for (const scope of ['project', 'org', 'user', 'system']) {
  test.serial(`${scope} scope: create, get, list, replace, delete`, async (t) => {
    const { base } = scopes().find((s) => s.scope === scope)!;
    const admin = as(ctx.srv.server, ctx.adminToken);
    const first = remember(secretValue(scope));
    const created = record(await admin.post(base, { name: 'API_TOKEN', value: first }));
    t.is(created.statusCode, 201, JSON.stringify(created.body));
    // A system secret also says whether it is shared with jobs (false unless a system admin sets it).
    t.deepEqual(Object.keys(created.body).sort(), scope === 'system' ? [...SECRET_FIELDS, 'shared_with_jobs'].sort() : SECRET_FIELDS);
    t.like(created.body, { name: 'API_TOKEN', type: 'env', scope, ...(scope === 'system' ? { shared_with_jobs: false } : {}) });
    t.regex(created.body.created_at, ISO);

    const key = record(await admin.post(base, { name: 'DEPLOY_KEY', value: remember(secretValue('key')), type: 'ssh_key' }));
    t.like(key.body, { name: 'DEPLOY_KEY', type: 'ssh_key' });

    const dup = record(await admin.post(base, { name: 'API_TOKEN', value: remember(secretValue('dup')) }));
    assertError(t, dup, 409, /^secret API_TOKEN already exists in /);

    const got = record(await admin.get(`${base}/API_TOKEN`));
    t.is(got.statusCode, 200);
    t.deepEqual(got.body, created.body);

    const list = record(await admin.get(`${base}?limit=1`));
    t.deepEqual(assertPage(t, list, { limit: 1, offset: 0, count: 1, total: 2, has_more: true }, 'name'), ['DEPLOY_KEY']);
    const rest = record(await admin.get(`${base}?limit=1&offset=1`));
    t.deepEqual(assertPage(t, rest, { limit: 1, offset: 1, count: 1, total: 2, has_more: false }, 'name'), ['API_TOKEN']);

    const replaced = record(await put(ctx, `${base}/API_TOKEN`, { value: remember(secretValue('new')), type: 'code_host_token' }));
    t.is(replaced.statusCode, 200, JSON.stringify(replaced.body));
    t.like(replaced.body, { name: 'API_TOKEN', type: 'code_host_token', scope });
    t.true(new Date(replaced.body.updated_at) >= new Date(created.body.updated_at));
    const keepsType = record(await put(ctx, `${base}/API_TOKEN`, { value: remember(secretValue('again')) }));
    t.is(keepsType.body.type, 'code_host_token');

    assertError(
      t,
      record(await put(ctx, `${base}/MISSING`, { value: remember(secretValue('x')) })),
      404,
      /^secret MISSING not found in .*; create it with POST$/,
    );
    assertError(t, record(await admin.get(`${base}/MISSING`)), 404, /^secret MISSING not found/);
    assertError(t, record(await admin.delete(`${base}/MISSING`)), 404, /^secret MISSING not found/);

    t.is((await admin.delete(`${base}/API_TOKEN`)).statusCode, 204);
    assertError(t, await admin.get(`${base}/API_TOKEN`), 404, /not found/);
    t.is((await admin.delete(`${base}/DEPLOY_KEY`)).statusCode, 204);
    assertPage(t, await admin.get(base), { limit: 10, offset: 0, count: 0, total: 0, has_more: false });
  });
}

test.serial('the same name lives independently at each scope and owner', async (t) => {
  const admin = as(ctx.srv.server, ctx.adminToken);
  for (const { base } of scopes()) t.is((await admin.post(base, { name: 'SHARED', value: remember(secretValue('shared')) })).statusCode, 201);
  const other = (await admin.post('/projects', { org_id: orgId, name: 'Other', slug: 'othrp' })).body.id;
  t.is((await admin.post(`/projects/${other}/secrets`, { name: 'SHARED', value: remember(secretValue('other')) })).statusCode, 201);
  assertPage(t, await admin.get(`/projects/${projectId}/secrets`), { limit: 10, offset: 0, count: 1, total: 1, has_more: false }, 'name');
  for (const { base } of scopes()) t.is((await admin.delete(`${base}/SHARED`)).statusCode, 204);
});

test.serial('bad input is 400 naming the field and writes nothing', async (t) => {
  const admin = as(ctx.srv.server, ctx.adminToken);
  const base = `/projects/${projectId}/secrets`;
  const value = remember(secretValue('bad'));
  const before = await rows(ctx, 'secrets', {});
  assertError(t, record(await admin.post(base, { name: 'lower_case', value })), 400, /"name" with value "lower_case" fails to match/);
  assertError(t, record(await admin.post(base, { name: '1ABC', value })), 400, /"name"/);
  assertError(t, record(await admin.post(base, { name: 'HAS-DASH', value })), 400, /"name"/);
  assertError(t, record(await admin.post(base, { name: 'NO_VALUE' })), 400, '"value" is required');
  assertError(t, record(await admin.post(base, { name: 'EMPTY', value: '' })), 400, '"value" is not allowed to be empty');
  assertError(t, record(await admin.post(base, { name: 'NUMBER', value: 42 })), 400, '"value" must be a string');
  assertError(
    t,
    record(await admin.post(base, { name: 'BAD_TYPE', value, type: 'password' })),
    400,
    /^"type" must be one of \[env, file, code_host_token, ssh_key\]$/,
  );
  assertError(t, record(await admin.post(base, { name: 'EXTRA', value, scope: 'org' })), 400, '"scope" is not allowed');
  assertError(t, record(await admin.post(base, { name: 'BIG', value: 'x'.repeat(64 * 1024 + 1) })), 400, /"value" length must be less than or equal to 65536/);
  assertError(t, record(await admin.get(`${base}/lower`)), 400, /"name"/);
  assertError(t, record(await admin.get(`${base}?include_deleted=true`)), 400, '"include_deleted" is not allowed');
  t.is((await admin.post(base, { name: 'REAL', value })).statusCode, 201);
  assertError(t, record(await put(ctx, `${base}/REAL`, { type: 'file' })), 400, '"value" is required');
  assertError(t, record(await put(ctx, `${base}/REAL`, { value, name: 'RENAMED' })), 400, '"name" is not allowed');
  t.is(await rows(ctx, 'secrets', {}), before + 1);
  t.is((await admin.delete(`${base}/REAL`)).statusCode, 204);
});

test.serial('project and org scopes: reading needs secrets:read, writing secrets:admin; unseen targets are 404', async (t) => {
  const member = await memberOf(ctx, orgId, 'member');
  const admin = await memberOf(ctx, orgId, 'orgadmin', 'admin');
  const stranger = await newUser(ctx, 'stranger');
  const value = remember(secretValue('perm'));
  for (const base of [`/projects/${projectId}/secrets`, `/orgs/${orgId}/secrets`]) {
    assertError(t, record(await member.api.post(base, { name: 'NOPE', value })), 403, 'missing permission secrets:admin');
    assertError(t, record(await member.api.get(base)), 403, 'missing permission secrets:read');
    assertError(t, record(await member.api.get(`${base}/NOPE`)), 403, 'missing permission secrets:read');
    assertError(t, record(await stranger.api.post(base, { name: 'NOPE', value })), 404, /^(project|org) .* not found$/);
    assertError(t, record(await stranger.api.get(base)), 404, /not found$/);

    t.is(record(await admin.api.post(base, { name: 'BY_ADMIN', value })).statusCode, 201);
    t.is((await admin.api.get(`${base}/BY_ADMIN`)).statusCode, 200);
    assertError(t, record(await call(ctx.srv.server, 'PUT', `${base}/BY_ADMIN`, { value }, member.token)), 403, 'missing permission secrets:admin');
    assertError(t, await member.api.delete(`${base}/BY_ADMIN`), 403, 'missing permission secrets:admin');
    t.is((await admin.api.delete(`${base}/BY_ADMIN`)).statusCode, 204);
  }
  assertError(t, await stranger.api.get(`/projects/${missingProjectId}/secrets`), 404, `project ${missingProjectId} not found`);
});

test.serial("user scope: own secrets, or any user's for the system administrator; another user id is 404", async (t) => {
  const alice = await newUser(ctx, 'alice');
  const bob = await newUser(ctx, 'bob');
  const value = remember(secretValue('alice'));
  const mine = `/users/${alice.id}/secrets`;
  t.is(record(await alice.api.post(mine, { name: 'MY_TOKEN', value })).statusCode, 201);
  t.is((await alice.api.get(`${mine}/MY_TOKEN`)).statusCode, 200);
  assertError(t, await bob.api.get(mine), 404, `user ${alice.id} not found`);
  assertError(t, await bob.api.get(`${mine}/MY_TOKEN`), 404, `user ${alice.id} not found`);
  assertError(t, await bob.api.post(mine, { name: 'PLANTED', value }), 404, `user ${alice.id} not found`);
  assertError(t, await call(ctx.srv.server, 'PUT', `${mine}/MY_TOKEN`, { value }, bob.token), 404, `user ${alice.id} not found`);
  assertError(t, await bob.api.delete(`${mine}/MY_TOKEN`), 404, `user ${alice.id} not found`);
  assertPage(t, await bob.api.get(`/users/${bob.id}/secrets`), { limit: 10, offset: 0, count: 0, total: 0, has_more: false });

  const admin = as(ctx.srv.server, ctx.adminToken);
  assertPage(t, await admin.get(mine), { limit: 10, offset: 0, count: 1, total: 1, has_more: false }, 'name');
  assertError(t, await admin.get('/users/usr_01h455vb4pex5vsknk084sn02q/secrets'), 404, 'user usr_01h455vb4pex5vsknk084sn02q not found');
});

test.serial('system scope is for the system administrator only', async (t) => {
  const orgOwner = await memberOf(ctx, orgId, 'owner', 'owner');
  assertError(t, await orgOwner.api.get('/system/secrets'), 403, 'this operation needs the system administrator');
  assertError(
    t,
    await orgOwner.api.post('/system/secrets', { name: 'X_KEY', value: remember(secretValue('sys')) }),
    403,
    'this operation needs the system administrator',
  );
  assertError(t, await as(ctx.srv.server).get('/system/secrets'), 401, /.+/);
});

/** A 409 of an ensure: the message, and `fields` naming what differs. */
function conflict(t: ExecutionContext, res: Reply, message: RegExp, fields: string[]): void {
  t.is(res.statusCode, 409, JSON.stringify(res.body));
  t.regex(res.body.message, message);
  t.deepEqual(res.body.fields, fields);
}

test.serial(
  'ensure: created or matching on every field but the value is 200 (the value is never compared nor changed); other fields 409 naming them',
  async (t) => {
    const admin = as(ctx.srv.server, ctx.adminToken);
    const { Tokens } = await import('../../core/tokens.ts');
    const sealer = ctx.srv.kernel.container.resolve(Tokens.Sealer);
    for (const { scope, base } of scopes()) {
      const first = remember(secretValue(`ensure-${scope}`));
      const created = record(await admin.post(`${base}/ensure`, { name: 'ENSURED', value: first }));
      t.is(created.statusCode, 200, JSON.stringify(created.body));
      t.like(created.body, { name: 'ENSURED', type: 'env', scope });
      const stored = () => ctx.srv.kernel.db('secrets').where({ scope, name: 'ENSURED' }).orderBy('id', 'desc').first();
      const before = await stored();

      const again = record(await admin.post(`${base}/ensure`, { name: 'ENSURED', value: remember(secretValue('other-value')), type: 'env' }));
      t.is(again.statusCode, 200, JSON.stringify(again.body));
      t.deepEqual(again.body, created.body);
      const after = await stored();
      t.is(after.value_enc, before.value_enc, 'an ensure never changes the value');
      const ownerId = { project: projectId, org: orgId, user: ctx.adminId, system: '' }[scope];
      t.is(sealer.open(after.value_enc, `secret:${scope}:${ownerId}:ENSURED`), first);

      const typed = record(await admin.post(`${base}/ensure`, { name: 'ENSURED', value: first, type: 'ssh_key' }));
      conflict(t, typed, /^secret ENSURED exists in .* with other type$/, ['type']);
      t.is((await admin.get(`${base}/ENSURED`)).body.type, 'env', 'a refused ensure changes nothing');
      t.is((await admin.delete(`${base}/ENSURED`)).statusCode, 204);
    }
    const sys = '/system/secrets';
    t.is(record(await admin.post(`${sys}/ensure`, { name: 'SHARED_ONE', value: remember(secretValue('shared')), shared_with_jobs: true })).statusCode, 200);
    const unshared = record(await admin.post(`${sys}/ensure`, { name: 'SHARED_ONE', value: remember(secretValue('shared2')) }));
    conflict(t, unshared, /with other shared_with_jobs$/, ['shared_with_jobs']);
    const both = record(await admin.post(`${sys}/ensure`, { name: 'SHARED_ONE', value: remember(secretValue('shared3')), type: 'file' }));
    conflict(t, both, /with other type, shared_with_jobs$/, ['type', 'shared_with_jobs']);
    t.is((await admin.delete(`${sys}/SHARED_ONE`)).statusCode, 204);

    // The create rules hold: bad input 400 naming the field, permissions and visibility as for POST.
    assertError(t, record(await admin.post(`/projects/${projectId}/secrets/ensure`, { value: 'x' })), 400, /"name" is required/);
    const member = await memberOf(ctx, orgId, 'ensure-member');
    const stranger = await newUser(ctx, 'ensure-stranger');
    const value = remember(secretValue('ensure-perm'));
    assertError(t, record(await member.api.post(`/projects/${projectId}/secrets/ensure`, { name: 'NOPE', value })), 403, 'missing permission secrets:admin');
    assertError(t, record(await stranger.api.post(`/projects/${projectId}/secrets/ensure`, { name: 'NOPE', value })), 404, /^project .* not found$/);
  },
);

test.serial('values are sealed at rest, bound to their row', async (t) => {
  const admin = as(ctx.srv.server, ctx.adminToken);
  const value = remember(secretValue('rest'));
  t.is((await admin.post(`/orgs/${orgId}/secrets`, { name: 'AT_REST', value })).statusCode, 201);
  const row = await ctx.srv.kernel.db('secrets').where({ org_id: orgId, name: 'AT_REST' }).first();
  t.regex(row.value_enc, /^v1:/);
  t.false(row.value_enc.includes(value));
  t.false(Buffer.from(JSON.stringify(row)).includes(Buffer.from(value).toString('base64').slice(0, 12)));
  const { Tokens } = await import('../../core/tokens.ts');
  const sealer = ctx.srv.kernel.container.resolve(Tokens.Sealer);
  t.is(sealer.open(row.value_enc, `secret:org:${orgId}:AT_REST`), value);
  t.throws(() => sealer.open(row.value_enc, `secret:org:${orgId}:OTHER`));
  t.throws(() => sealer.open(row.value_enc, `secret:project:${projectId}:AT_REST`));
});

test.serial('no reply in this file ever carried a secret value', (t) => {
  t.true(seen.length > 50);
  assertNoValues(t, seen, values);
});
