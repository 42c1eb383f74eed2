import test from 'ava';
import { as } from '../support/server.ts';
import { assertError, assertPage, memberOf, newUser, rows, setup, unique, type Ctx, type User } from '../orgs/helpers.ts';

let ctx: Ctx;

interface World {
  orgA: string;
  orgB: string;
  ownerA: User;
  ownerB: User;
  memberA: User;
  a1: string;
  a2: string;
  b1: string;
}
let w: World;

test.before(async () => {
  ctx = await setup();
  const ownerA = await newUser(ctx, 'iso-owner-a');
  const ownerB = await newUser(ctx, 'iso-owner-b');
  const orgA = (await ownerA.api.post('/orgs', { name: unique('Org A') })).body.id;
  const orgB = (await ownerB.api.post('/orgs', { name: unique('Org B') })).body.id;
  const a1 = (await ownerA.api.post('/projects', { org_id: orgA, name: 'A One', slug: 'isoa1' })).body.id;
  const a2 = (await ownerA.api.post('/projects', { org_id: orgA, name: 'A Two', slug: 'isoa2' })).body.id;
  const b1 = (await ownerB.api.post('/projects', { org_id: orgB, name: 'B One', slug: 'isob1' })).body.id;
  const memberA = await memberOf(ctx, orgA, 'iso-member-a', 'admin');
  w = { orgA, orgB, ownerA, ownerB, memberA, a1, a2, b1 };
});

test.after.always(async () => {
  await ctx?.srv.stop();
});

test('a member of org A gets 404 on org B and everything in it', async (t) => {
  const { memberA: u, orgB, b1, ownerB } = w;
  const orgNf = `org ${orgB} not found`;
  const projNf = `project ${b1} not found`;
  assertError(t, await u.api.get(`/orgs/${orgB}`), 404, orgNf);
  assertError(t, await u.api.patch(`/orgs/${orgB}`, { name: 'taken over' }), 404, orgNf);
  assertError(t, await u.api.delete(`/orgs/${orgB}`), 404, orgNf);
  assertError(t, await u.api.get(`/orgs/${orgB}/members`), 404, orgNf);
  assertError(t, await u.api.post(`/orgs/${orgB}/members`, { email: 'intruder@example.com' }), 404, orgNf);
  assertError(t, await u.api.post('/projects', { org_id: orgB, name: 'Intruder' }), 404, orgNf);
  assertError(t, await u.api.post('/projects/ensure', { org_id: orgB, name: 'B One' }), 404, orgNf);

  assertError(t, await u.api.get(`/projects/${b1}`), 404, projNf);
  assertError(t, await u.api.patch(`/projects/${b1}`, { name: 'taken over' }), 404, projNf);
  assertError(t, await u.api.delete(`/projects/${b1}`), 404, projNf);
  assertError(t, await u.api.get(`/projects/${b1}/members`), 404, projNf);
  assertError(t, await u.api.post(`/projects/${b1}/members`, { email: 'intruder@example.com' }), 404, projNf);
  assertError(t, await u.api.patch(`/projects/${b1}/members/${ownerB.id}`, { role: 'member' }), 404, projNf);

  t.is(await rows(ctx, 'users', { email: 'intruder@example.com' }), 0);
  t.is(await rows(ctx, 'projects', { name: 'Intruder' }), 0);
  t.like(await ctx.srv.kernel.db('orgs').where({ id: orgB }).first(), { deleted: false });
  t.like(await ctx.srv.kernel.db('projects').where({ id: b1 }).first(), { name: 'B One', deleted: false });
});

test("org B's projects never appear in org A members' lists", async (t) => {
  const { memberA: u, orgA, orgB, a1, a2 } = w;
  t.deepEqual(assertPage(t, await u.api.get('/orgs'), { limit: 10, offset: 0, count: 1, total: 1, has_more: false }), [orgA]);
  t.deepEqual(assertPage(t, await u.api.get('/orgs?include_deleted=true'), { limit: 10, offset: 0, count: 1, total: 1, has_more: false }), [orgA]);
  t.deepEqual(assertPage(t, await u.api.get('/projects'), { limit: 10, offset: 0, count: 2, total: 2, has_more: false }), [a2, a1]);
  t.deepEqual(assertPage(t, await u.api.get('/projects?include_deleted=true&limit=100'), { limit: 100, offset: 0, count: 2, total: 2, has_more: false }), [
    a2,
    a1,
  ]);
  t.deepEqual(assertPage(t, await u.api.get(`/projects?org_id=${orgB}`), { limit: 10, offset: 0, count: 0, total: 0, has_more: false }), []);
  t.deepEqual(assertPage(t, await u.api.get(`/projects?org_id=${orgB}&offset=5`), { limit: 10, offset: 5, count: 0, total: 0, has_more: false }), []);

  // The system administrator sees both orgs' projects.
  const admin = as(ctx.srv.server, ctx.adminToken);
  const all = await admin.get('/projects');
  t.true(all.body.data.some((p: { org_id: string }) => p.org_id === orgB));
});

test('a project-only member sees that project and nothing else of its org', async (t) => {
  const { ownerA, orgA, a1, a2 } = w;
  const email = `${unique('project-only')}@example.com`.toLowerCase();
  const added = await ownerA.api.post(`/projects/${a1}/members`, { email, role: 'member' });
  t.is(added.statusCode, 201);
  t.is(await rows(ctx, 'org_members', { org_id: orgA, user_id: added.body.user_id }), 0);
  const { TokenService } = await import('../../core/auth/tokens.ts');
  const { Users } = await import('../../plugins/auth/users.ts');
  const container = ctx.srv.server.app.container;
  const user = await container.resolve(Users).findByEmail(email);
  const u = as(ctx.srv.server, (await container.resolve(TokenService).issueForUser(user!)).access_token);

  const got = await u.get(`/projects/${a1}`);
  t.is(got.statusCode, 200);
  t.is(got.body.id, a1);
  t.deepEqual(assertPage(t, await u.get('/projects'), { limit: 10, offset: 0, count: 1, total: 1, has_more: false }), [a1]);
  t.deepEqual(assertPage(t, await u.get(`/projects?org_id=${orgA}`), { limit: 10, offset: 0, count: 1, total: 1, has_more: false }), [a1]);
  t.is((await u.get(`/projects/${a1}/members`)).statusCode, 200);

  assertError(t, await u.get(`/orgs/${orgA}`), 404, `org ${orgA} not found`);
  assertError(t, await u.get(`/orgs/${orgA}/members`), 404, `org ${orgA} not found`);
  assertError(t, await u.post('/projects', { org_id: orgA, name: 'Sneaky' }), 404, `org ${orgA} not found`);
  assertError(t, await u.get(`/projects/${a2}`), 404, `project ${a2} not found`);
  assertError(t, await u.patch(`/projects/${a2}`, { name: 'x' }), 404, `project ${a2} not found`);
  assertError(t, await u.get(`/projects/${a2}/members`), 404, `project ${a2} not found`);
  t.deepEqual(assertPage(t, await u.get('/orgs'), { limit: 10, offset: 0, count: 0, total: 0, has_more: false }), []);
  t.is(await rows(ctx, 'projects', { name: 'Sneaky' }), 0);
});
