import test from 'ava';
import { assertError, assertPage, MEMBER_FIELDS, memberOf, missingUserId, newUser, rows, setup, unique, type Ctx, type User } from '../orgs/helpers.ts';
import { as } from '../support/server.ts';

let ctx: Ctx;

test.before(async () => {
  ctx = await setup();
});

test.after.always(async () => {
  await ctx?.srv.stop();
});

let slugCounter = 0;
const freshSlug = (): string => `pm${(++slugCounter).toString(36).padStart(3, '0')}`;

/** An org owned by a fresh user, with one project in it. */
async function ownedProject(name: string): Promise<{ owner: User; orgId: string; projectId: string }> {
  const owner = await newUser(ctx, `${name}-owner`);
  const org = await owner.api.post('/orgs', { name: unique(name) });
  const project = await owner.api.post('/projects', { org_id: org.body.id, name, slug: freshSlug() });
  if (project.statusCode !== 201) throw new Error(JSON.stringify(project.body));
  return { owner, orgId: org.body.id, projectId: project.body.id };
}

/** A user who belongs to the project only (added through /projects/{id}/members). */
async function projectMember(projectId: string, actor: User, name: string, role = 'member'): Promise<User> {
  const email = `${unique(name)}@example.com`.toLowerCase();
  const res = await actor.api.post(`/projects/${projectId}/members`, { email, role });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  const { TokenService } = await import('../../core/auth/tokens.ts');
  const { Users } = await import('../../plugins/auth/users.ts');
  const container = ctx.srv.server.app.container;
  const user = await container.resolve(Users).findByEmail(email);
  const token = (await container.resolve(TokenService).issueForUser(user!)).access_token;
  return { id: user!.id, email, token, api: as(ctx.srv.server, token) };
}

const roleIn = async (projectId: string, userId: string): Promise<string | undefined> =>
  (await ctx.srv.kernel.db('project_members').where({ project_id: projectId, user_id: userId }).first('role'))?.role;

test('project members: add by e-mail (201), again 200, another role 409, PATCH, DELETE (204), unknown 404', async (t) => {
  const { owner, projectId } = await ownedProject('lifecycle');
  const email = `${unique('proj-newcomer')}@example.com`.toLowerCase();
  t.is(await rows(ctx, 'users', { email }), 0);

  const res = await owner.api.post(`/projects/${projectId}/members`, { email });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body).sort(), MEMBER_FIELDS);
  t.like(res.body, { email, role: 'member', display_name: null });
  t.is(await rows(ctx, 'users', { email }), 1);
  t.is(await roleIn(projectId, res.body.user_id), 'member');

  const again = await owner.api.post(`/projects/${projectId}/members`, { email, role: 'member' });
  t.is(again.statusCode, 200);
  t.deepEqual(again.body, res.body);
  assertError(
    t,
    await owner.api.post(`/projects/${projectId}/members`, { email, role: 'admin' }),
    409,
    `${email} is already a member with role member; change it with PATCH .../members/${res.body.user_id}`,
  );
  t.is(await roleIn(projectId, res.body.user_id), 'member');

  const list = await owner.api.get(`/projects/${projectId}/members`);
  t.deepEqual(assertPage(t, list, { limit: 10, offset: 0, count: 1, total: 1, has_more: false }, 'user_id'), [res.body.user_id]);

  const patched = await owner.api.patch(`/projects/${projectId}/members/${res.body.user_id}`, { role: 'admin' });
  t.is(patched.statusCode, 200);
  t.like(patched.body, { user_id: res.body.user_id, role: 'admin' });
  t.is(await roleIn(projectId, res.body.user_id), 'admin');

  assertError(t, await owner.api.patch(`/projects/${projectId}/members/${missingUserId}`, { role: 'member' }), 404, `user ${missingUserId} is not a member`);
  assertError(t, await owner.api.delete(`/projects/${projectId}/members/${missingUserId}`), 404, `user ${missingUserId} is not a member`);
  assertError(t, await owner.api.delete(`/projects/${projectId}/members/${owner.id}`), 404, `user ${owner.id} is not a member`);
  assertError(t, await owner.api.post(`/projects/${projectId}/members`, { email: 'nope' }), 400, '"email" must be a valid email');
  assertError(t, await owner.api.delete(`/projects/proj_bad/members/${owner.id}`), 400, /"project_id"/);

  const removed = await owner.api.delete(`/projects/${projectId}/members/${res.body.user_id}`);
  t.is(removed.statusCode, 204);
  t.is(await roleIn(projectId, res.body.user_id), undefined);
  t.is(await rows(ctx, 'users', { email }), 1);
});

test('project owner role: only an owner grants or removes it; an org admin gets 403', async (t) => {
  const { owner, orgId, projectId } = await ownedProject('owners');
  const orgAdmin = await memberOf(ctx, orgId, 'proj-org-admin', 'admin');
  const email = `${unique('proj-owner')}@example.com`.toLowerCase();

  assertError(t, await orgAdmin.api.post(`/projects/${projectId}/members`, { email, role: 'owner' }), 403, 'only an owner can grant the owner role');
  t.is(await rows(ctx, 'users', { email }), 0);

  const granted = await owner.api.post(`/projects/${projectId}/members`, { email, role: 'owner' });
  t.is(granted.statusCode, 201);
  const pOwner = granted.body.user_id;
  assertError(t, await orgAdmin.api.delete(`/projects/${projectId}/members/${pOwner}`), 403, 'only an owner can remove an owner');
  assertError(
    t,
    await orgAdmin.api.patch(`/projects/${projectId}/members/${pOwner}`, { role: 'member' }),
    403,
    'only an owner can grant or revoke the owner role',
  );
  t.is(await roleIn(projectId, pOwner), 'owner');

  // A project-level admin (not in the org) manages members below owner, like an org admin.
  const pAdmin = await projectMember(projectId, owner, 'proj-admin', 'admin');
  const added = await pAdmin.api.post(`/projects/${projectId}/members`, { email: `${unique('by-padmin')}@example.com` });
  t.is(added.statusCode, 201);
  assertError(
    t,
    await pAdmin.api.post(`/projects/${projectId}/members`, { email: `${unique('x')}@example.com`, role: 'owner' }),
    403,
    'only an owner can grant the owner role',
  );

  // Projects need no owner of their own (the org's owners own them): the only project owner can go.
  t.is((await owner.api.delete(`/projects/${projectId}/members/${pOwner}`)).statusCode, 204);
  t.is(await rows(ctx, 'project_members', { project_id: projectId, role: 'owner' }), 0);
});

test('a member cannot add, change or remove project members (403 members:write)', async (t) => {
  const { owner, orgId, projectId } = await ownedProject('memberlimits');
  const orgMember = await memberOf(ctx, orgId, 'proj-org-member', 'member');
  const pMember = await projectMember(projectId, owner, 'proj-only-member', 'member');
  const email = `${unique('denied')}@example.com`.toLowerCase();

  for (const actor of [orgMember, pMember]) {
    t.is((await actor.api.get(`/projects/${projectId}/members`)).statusCode, 200);
    assertError(t, await actor.api.post(`/projects/${projectId}/members`, { email }), 403, 'missing permission members:write');
    assertError(t, await actor.api.patch(`/projects/${projectId}/members/${pMember.id}`, { role: 'admin' }), 403, 'missing permission members:write');
    assertError(t, await actor.api.delete(`/projects/${projectId}/members/${pMember.id}`), 403, 'missing permission members:write');
  }
  t.is(await rows(ctx, 'users', { email }), 0);
  t.is(await roleIn(projectId, pMember.id), 'member');
});

test('removing a project member takes effect at once', async (t) => {
  const { owner, projectId } = await ownedProject('revoke');
  const member = await projectMember(projectId, owner, 'proj-revoked');
  t.is((await member.api.get(`/projects/${projectId}`)).statusCode, 200);
  t.is((await member.api.get('/projects')).body.pagination.total, 1);

  t.is((await owner.api.delete(`/projects/${projectId}/members/${member.id}`)).statusCode, 204);
  assertError(t, await member.api.get(`/projects/${projectId}`), 404, `project ${projectId} not found`);
  assertError(t, await member.api.get(`/projects/${projectId}/members`), 404, `project ${projectId} not found`);
  t.deepEqual(assertPage(t, await member.api.get('/projects'), { limit: 10, offset: 0, count: 0, total: 0, has_more: false }), []);
});

test('an outsider gets 404 on every project member route', async (t) => {
  const { owner, projectId } = await ownedProject('outsider');
  const outsider = await newUser(ctx, 'proj-outsider');
  const email = `${unique('by-outsider')}@example.com`.toLowerCase();
  const nf = `project ${projectId} not found`;
  assertError(t, await outsider.api.get(`/projects/${projectId}/members`), 404, nf);
  assertError(t, await outsider.api.post(`/projects/${projectId}/members`, { email }), 404, nf);
  assertError(t, await outsider.api.patch(`/projects/${projectId}/members/${owner.id}`, { role: 'admin' }), 404, nf);
  assertError(t, await outsider.api.delete(`/projects/${projectId}/members/${owner.id}`), 404, nf);
  t.is(await rows(ctx, 'users', { email }), 0);
});
