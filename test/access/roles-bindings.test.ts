import test from 'ava';
import { as } from '../support/server.ts';
import { newUser, setup, type Ctx, type User } from '../orgs/helpers.ts';

let ctx: Ctx;
let admin: ReturnType<typeof as>;
let orgId = '';
let projectId = '';
let otherProjectId = '';
let owner: User;
let orgAdmin: User;
let member: User;

test.before(async () => {
  ctx = await setup();
  admin = as(ctx.srv.server, ctx.adminToken);
  owner = await newUser(ctx, 'owner');
  orgAdmin = await newUser(ctx, 'orgadmin');
  member = await newUser(ctx, 'member');
  orgId = (await owner.api.post('/orgs', { name: 'Acl' })).body.id;
  for (const [u, role] of [
    [orgAdmin, 'admin'],
    [member, 'member'],
  ] as const) {
    const r = await owner.api.post(`/orgs/${orgId}/members`, { email: u.email, role });
    if (r.statusCode !== 201) throw new Error(JSON.stringify(r.body));
  }
  projectId = (await owner.api.post('/projects', { org_id: orgId, name: 'One', slug: 'aclone' })).body.id;
  otherProjectId = (await owner.api.post('/projects', { org_id: orgId, name: 'Two', slug: 'acltwo' })).body.id;
});
test.after.always(async () => {
  await ctx?.srv.stop();
});

const can = (api: ReturnType<typeof as>, q: Record<string, string>) => api.get(`/orgs/${orgId}/access/can?${new URLSearchParams(q)}`);

test.serial('custom roles: catalog permissions only (400 naming the bad one), unique names, 409 while bound', async (t) => {
  const bad = await owner.api.post(`/orgs/${orgId}/access/roles`, { name: 'weird', permissions: ['jobs:read', 'jobs:fly'] });
  t.is(bad.statusCode, 400);
  t.regex(bad.body.message, /"permissions\[1\]" is not a permission of the catalog/);
  t.is((await owner.api.get(`/orgs/${orgId}/access/roles`)).body.pagination.total, 0, 'nothing written');
  const role = await owner.api.post(`/orgs/${orgId}/access/roles`, { name: 'deployer', scope: 'project', permissions: ['environments:write', 'builds:read'] });
  t.is(role.statusCode, 201, JSON.stringify(role.body));
  t.like(role.body, { name: 'deployer', scope: 'project', permissions: ['environments:write', 'builds:read'], org_id: orgId });
  t.is((await owner.api.post(`/orgs/${orgId}/access/roles`, { name: 'deployer', permissions: ['jobs:read'] })).statusCode, 409);
  const outsider = await newUser(ctx, 'outsider');
  const binding = await owner.api.post(`/orgs/${orgId}/access/bindings`, {
    role: role.body.id,
    principal_type: 'user',
    principal_id: outsider.id,
    project_id: projectId,
  });
  t.is(binding.statusCode, 201, JSON.stringify(binding.body));
  const del = await owner.api.delete(`/orgs/${orgId}/access/roles/${role.body.id}`);
  t.is(del.statusCode, 409);
  t.regex(del.body.message, /used by 1 binding/);
  t.is((await owner.api.delete(`/orgs/${orgId}/access/bindings/${binding.body.id}`)).statusCode, 204);
  t.is((await owner.api.delete(`/orgs/${orgId}/access/roles/${role.body.id}`)).statusCode, 204);
});

test.serial('a project binding of a custom role opens that project to exactly its permissions, not the org nor other projects', async (t) => {
  const role = (await owner.api.post(`/orgs/${orgId}/access/roles`, { name: 'reader', scope: 'project', permissions: ['jobs:read', 'projects:read'] })).body;
  const u = await newUser(ctx, 'reader');
  t.is((await u.api.get(`/projects/${projectId}`)).statusCode, 404, 'before: invisible');
  await owner.api.post(`/orgs/${orgId}/access/bindings`, { role: role.id, principal_type: 'user', principal_id: u.id, project_id: projectId });
  t.is((await u.api.get(`/projects/${projectId}`)).statusCode, 200);
  t.is((await u.api.get(`/projects/${projectId}/jobs`)).statusCode, 200);
  const create = await u.api.post(`/projects/${projectId}/jobs`, { description: 'nope' });
  t.is(create.statusCode, 403);
  t.is(create.body.message, 'missing permission jobs:create');
  t.is((await u.api.get(`/projects/${otherProjectId}`)).statusCode, 404);
  t.is((await u.api.get(`/orgs/${orgId}`)).statusCode, 404);
  t.deepEqual(
    (await u.api.get('/projects')).body.data.map((p: { id: string }) => p.id),
    [projectId],
    'lists agree',
  );
});

test.serial('scope rules: a project role needs project_id, an org role refuses it (422); unknown principal or foreign project 404', async (t) => {
  const projectRole = (await owner.api.post(`/orgs/${orgId}/access/roles`, { name: 'p-only', scope: 'project', permissions: ['jobs:read'] })).body;
  const orgRole = (await owner.api.post(`/orgs/${orgId}/access/roles`, { name: 'o-only', scope: 'org', permissions: ['orgs:read'] })).body;
  const u = await newUser(ctx, 'scopes');
  const a = await owner.api.post(`/orgs/${orgId}/access/bindings`, { role: projectRole.id, principal_type: 'user', principal_id: u.id });
  t.is(a.statusCode, 422);
  t.regex(a.body.message, /scope project: give project_id/);
  const b = await owner.api.post(`/orgs/${orgId}/access/bindings`, { role: orgRole.id, principal_type: 'user', principal_id: u.id, project_id: projectId });
  t.is(b.statusCode, 422);
  const ghost = await owner.api.post(`/orgs/${orgId}/access/bindings`, {
    role: 'member',
    principal_type: 'user',
    principal_id: 'usr_01h455vb4pex5vsknk084sn02q',
  });
  t.is(ghost.statusCode, 404);
  const foreignOrg = (await admin.post('/orgs', { name: 'Foreign' })).body.id;
  const foreignProject = (await admin.post('/projects', { org_id: foreignOrg, name: 'F', slug: 'aclfor' })).body.id;
  t.is(
    (await owner.api.post(`/orgs/${orgId}/access/bindings`, { role: 'member', principal_type: 'user', principal_id: u.id, project_id: foreignProject }))
      .statusCode,
    404,
  );
  t.is((await owner.api.get(`/orgs/${orgId}/access/bindings?principal_id=${u.id}`)).body.pagination.total, 0, 'nothing written');
});

test.serial('nobody grants what they do not hold: an org admin cannot bind owner (403 naming the permission)', async (t) => {
  const u = await newUser(ctx, 'escalate');
  const r = await orgAdmin.api.post(`/orgs/${orgId}/access/bindings`, { role: 'owner', principal_type: 'user', principal_id: u.id });
  t.is(r.statusCode, 403);
  t.is(r.body.message, 'cannot grant permissions you do not hold: orgs:delete');
  t.is((await orgAdmin.api.post(`/orgs/${orgId}/access/bindings`, { role: 'admin', principal_type: 'user', principal_id: u.id })).statusCode, 201);
  const m = await member.api.post(`/orgs/${orgId}/access/bindings`, { role: 'member', principal_type: 'user', principal_id: u.id });
  t.is(m.statusCode, 403);
  t.is(m.body.message, 'missing permission access:admin');
});

test.serial('groups: a binding to a group reaches its members, and leaving the group takes it away', async (t) => {
  const u = await newUser(ctx, 'grouped');
  const group = (await owner.api.post(`/orgs/${orgId}/access/groups`, { name: 'ops' })).body;
  t.is((await owner.api.post(`/orgs/${orgId}/access/groups/${group.id}/members`, { principal_type: 'user', principal_id: u.id })).statusCode, 201);
  t.is(
    (await owner.api.post(`/orgs/${orgId}/access/groups/${group.id}/members`, { principal_type: 'user', principal_id: u.id })).statusCode,
    200,
    'idempotent',
  );
  t.is((await owner.api.post(`/orgs/${orgId}/access/bindings`, { role: 'member', principal_type: 'group', principal_id: group.id })).statusCode, 201);
  t.is((await u.api.get(`/orgs/${orgId}`)).statusCode, 200);
  t.is((await u.api.get(`/projects/${otherProjectId}/jobs`)).statusCode, 200, 'org-wide binding covers every project');
  const explained = await owner.api.get(`/orgs/${orgId}/access/explain?principal_type=user&principal_id=${u.id}&permission=jobs:create`);
  t.true(explained.body.allowed);
  t.like(explained.body.sources[0], { kind: 'binding', role: 'member', via_group: group.id, grants: ['jobs:create'] });
  t.regex(explained.body.reason, new RegExp(`through group ${group.id}`));
  t.is((await owner.api.delete(`/orgs/${orgId}/access/groups/${group.id}/members/user/${u.id}`)).statusCode, 204);
  t.is((await u.api.get(`/orgs/${orgId}`)).statusCode, 404);
});

test.serial('can and explain: memberships, missing permissions, resource actions, bad input', async (t) => {
  t.deepEqual((await can(owner.api, { principal_type: 'user', principal_id: member.id, permission: 'jobs:create' })).body, { allowed: true });
  t.deepEqual((await can(owner.api, { principal_type: 'user', principal_id: member.id, permission: 'secrets:write' })).body, { allowed: false });
  t.deepEqual((await can(owner.api, { principal_type: 'user', principal_id: member.id, resource_type: 'orgfs', resource: 'docs/a.md', action: 'read' })).body, {
    allowed: true,
  });
  t.deepEqual(
    (await can(owner.api, { principal_type: 'user', principal_id: member.id, resource_type: 'orgfs', resource: 'docs/a.md', action: 'write' })).body,
    { allowed: false },
  );
  t.deepEqual((await can(owner.api, { principal_type: 'user', principal_id: orgAdmin.id, resource_type: 'envdb', action: 'admin' })).body, { allowed: true });
  const why = await owner.api.get(`/orgs/${orgId}/access/explain?principal_type=user&principal_id=${member.id}&permission=secrets:write`);
  t.false(why.body.allowed);
  t.deepEqual(why.body.required, ['secrets:write']);
  t.regex(why.body.reason, /^missing secrets:write: not given by org membership as member$/);
  const stranger = await newUser(ctx, 'stranger');
  const none = await owner.api.get(`/orgs/${orgId}/access/explain?principal_type=user&principal_id=${stranger.id}&permission=jobs:read`);
  t.false(none.body.allowed);
  t.regex(none.body.reason, /no membership, binding or group gives user/);
  const admin2 = await owner.api.get(`/orgs/${orgId}/access/explain?principal_type=user&principal_id=${ctx.adminId}&permission=orgs:delete`);
  t.like(admin2.body, { allowed: true, sources: [{ kind: 'system_admin' }] });
  const malformed: Record<string, string>[] = [
    { principal_type: 'user', principal_id: member.id },
    { principal_type: 'robot', principal_id: member.id, permission: 'jobs:read' },
    { principal_type: 'user', principal_id: member.id, permission: 'jobs:fly' },
    { principal_type: 'user', principal_id: member.id, resource_type: 'orgfs' },
    { principal_type: 'service_account', principal_id: member.id, permission: 'jobs:read' },
  ];
  for (const q of malformed) t.is((await can(owner.api, q)).statusCode, 400, JSON.stringify(q));
  t.is((await can(stranger.api, { principal_type: 'user', principal_id: member.id, permission: 'jobs:read' })).statusCode, 404, 'an org you cannot see');
});

test.serial('can agrees with what the routes decide, for every principal and permission tried', async (t) => {
  const reader = await newUser(ctx, 'eq-reader');
  const role = (await owner.api.post(`/orgs/${orgId}/access/roles`, { name: 'eq', scope: 'org', permissions: ['orgs:read', 'projects:read', 'jobs:read'] }))
    .body;
  await owner.api.post(`/orgs/${orgId}/access/bindings`, { role: role.id, principal_type: 'user', principal_id: reader.id });
  const stranger = await newUser(ctx, 'eq-stranger');
  // [permission, a route call that needs exactly it on the project]
  const probes: [string, (api: ReturnType<typeof as>) => Promise<{ statusCode: number }>][] = [
    ['projects:read', (api) => api.get(`/projects/${projectId}`)],
    ['jobs:read', (api) => api.get(`/projects/${projectId}/jobs`)],
    ['jobs:create', (api) => api.post(`/projects/${projectId}/jobs`, { description: 'probe' })],
    ['members:write', (api) => api.post(`/projects/${projectId}/members`, { email: 'nobody-probe@example.com', role: 'member' })],
    ['access:admin', (api) => api.post(`/orgs/${orgId}/access/groups`, { name: `g-${Math.random().toString(16).slice(2, 8)}` })],
  ];
  for (const u of [owner, orgAdmin, member, reader, stranger]) {
    for (const [permission, call] of probes) {
      const res = await call(u.api);
      const routeAllowed = res.statusCode < 400;
      const answer = await can(owner.api, { principal_type: 'user', principal_id: u.id, permission, project_id: projectId });
      t.is(answer.body.allowed, routeAllowed, `${u.email} ${permission}: route ${res.statusCode}`);
    }
  }
});
