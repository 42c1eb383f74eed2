import test from 'ava';
import { memberOf, newUser, setup, type Ctx, type User } from '../orgs/helpers.ts';

/** POST /orgs/{id}/service-accounts/ensure: a service account is known by its name in the org. */
let ctx: Ctx;
let owner: User;
let orgId = '';
let projectId = '';

test.before(async () => {
  ctx = await setup();
  owner = await newUser(ctx, 'saens-owner');
  orgId = (await owner.api.post('/orgs', { name: 'Ensured bots' })).body.id;
  projectId = (await owner.api.post('/projects', { org_id: orgId, name: 'Ensured', slug: 'ensbot' })).body.id;
});
test.after.always(async () => {
  await ctx?.srv.stop();
});

const ensure = (body: Record<string, unknown>, api = owner.api) => api.post(`/orgs/${orgId}/service-accounts/ensure`, body);

test.serial('created with its role when missing (200); the same again answers it; another description or an unbound role is 409 naming them', async (t) => {
  const created = await ensure({ name: 'deployer', description: 'deploys', role: 'member', project_id: projectId });
  t.is(created.statusCode, 200, JSON.stringify(created.body));
  t.like(created.body, { name: 'deployer', description: 'deploys', org_id: orgId });
  const bindings = (await owner.api.get(`/orgs/${orgId}/access/bindings?limit=100`)).body.data.filter((b: any) => b.principal_id === created.body.id);
  t.deepEqual(
    bindings.map((b: any) => [b.role, b.project_id]),
    [['member', projectId]],
  );

  for (const same of [{ name: 'deployer' }, { name: 'deployer', description: 'deploys' }, { name: 'deployer', role: 'member', project_id: projectId }]) {
    const again = await ensure(same);
    t.is(again.statusCode, 200, JSON.stringify(same));
    t.is(again.body.id, created.body.id);
  }
  const differs = await ensure({ name: 'deployer', description: 'other', role: 'member' });
  t.is(differs.statusCode, 409);
  t.is(differs.body.message, `service account deployer exists in org ${orgId} with other description, role`);
  t.is((await owner.api.get(`/orgs/${orgId}/service-accounts`)).body.pagination.total, 1);
});

test.serial('ensure needs access:admin (403) on a visible org (404), and the alias collection answers the same', async (t) => {
  const member = await memberOf(ctx, orgId, 'saens-member');
  t.is((await ensure({ name: 'deployer' }, member.api)).statusCode, 403);
  const stranger = await newUser(ctx, 'saens-stranger');
  t.is((await ensure({ name: 'deployer' }, stranger.api)).statusCode, 404);
  const alias = await owner.api.post(`/orgs/${orgId}/service-principals/ensure`, { name: 'deployer' });
  t.is(alias.statusCode, 200);
  t.is(alias.body.name, 'deployer');
});
