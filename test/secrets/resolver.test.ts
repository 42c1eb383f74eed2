import test from 'ava';
import Boom from '@hapi/boom';
import { as } from '../support/server.ts';
import { newUser, setup, type Ctx } from '../orgs/helpers.ts';
import { SecretResolverToken, type SecretResolver } from '../../core/ports/secrets.ts';
import { SecretResolver as SecretResolverClass } from '../../plugins/secrets/resolver.ts';
import { SecretMissing, SecretNotShared } from '../../core/errors.ts';

let ctx: Ctx;
let resolver: SecretResolver;
let orgId: string;
let projectId: string;
let otherOrgProject: string;
let userId: string;

test.before(async () => {
  ctx = await setup();
  resolver = ctx.srv.kernel.container.resolve(SecretResolverToken);
  const admin = as(ctx.srv.server, ctx.adminToken);
  orgId = (await admin.post('/orgs', { name: 'Resolve Org' })).body.id;
  projectId = (await admin.post('/projects', { org_id: orgId, name: 'Resolve', slug: 'resolv' })).body.id;
  const otherOrg = (await admin.post('/orgs', { name: 'Other Org' })).body.id;
  otherOrgProject = (await admin.post('/projects', { org_id: otherOrg, name: 'Elsewhere', slug: 'elsew' })).body.id;
  const user = await newUser(ctx, 'runner');
  userId = user.id;
  const put = async (base: string, name: string, value: string, token = ctx.adminToken, extra: Record<string, unknown> = {}) => {
    const res = await as(ctx.srv.server, token).post(base, { name, value, ...extra });
    if (res.statusCode !== 201) throw new Error(`${base} ${name}: ${res.statusCode} ${JSON.stringify(res.body)}`);
  };
  for (const name of ['ALL_FOUR']) {
    await put(`/projects/${projectId}/secrets`, name, 'from-project');
    await put(`/users/${userId}/secrets`, name, 'from-user', user.token);
    await put(`/orgs/${orgId}/secrets`, name, 'from-org');
    await put('/system/secrets', name, 'from-system', ctx.adminToken, { shared_with_jobs: true });
  }
  await put(`/users/${userId}/secrets`, 'USER_ORG_SYSTEM', 'user-wins', user.token);
  await put(`/orgs/${orgId}/secrets`, 'USER_ORG_SYSTEM', 'org-loses');
  await put('/system/secrets', 'USER_ORG_SYSTEM', 'system-loses');
  await put(`/orgs/${orgId}/secrets`, 'ORG_SYSTEM', 'org-wins');
  await put('/system/secrets', 'ORG_SYSTEM', 'system-loses');
  // System secrets reach jobs only when shared with them; the ones above that lose are not.
  await put('/system/secrets', 'SYSTEM_ONLY', 'system-value', ctx.adminToken, { shared_with_jobs: true });
  await put('/system/secrets', 'SYSTEM_UNSHARED', 'system-unshared-value');
  await put('/system/secrets', 'CHATAPP_SIGNING_SECRET', 'chat-signing-value');
  await put(`/projects/${otherOrgProject}/secrets`, 'OTHER_PROJECT', 'not-yours');
});
test.after.always(async () => {
  await ctx?.srv.stop();
});

test('the implementation is registered under the port token', (t) => {
  t.true(resolver instanceof SecretResolverClass);
});

test('project over user over org over system', async (t) => {
  const job = { projectId, userId };
  t.is(await resolver.resolve('ALL_FOUR', job), 'from-project');
  t.is(await resolver.resolve('USER_ORG_SYSTEM', job), 'user-wins');
  t.is(await resolver.resolve('ORG_SYSTEM', job), 'org-wins');
  t.is(await resolver.resolve('SYSTEM_ONLY', job), 'system-value');
  t.is(await resolver.resolve('ALL_FOUR', { userId }), 'from-user');
  t.is(await resolver.resolve('ALL_FOUR', { orgId }), 'from-org');
  t.is(await resolver.resolve('ALL_FOUR', {}), 'from-system');
});

test('a replaced value is served at once, not the one opened before', async (t) => {
  const admin = as(ctx.srv.server, ctx.adminToken);
  t.is((await admin.post(`/orgs/${orgId}/secrets`, { name: 'ROTATED', value: 'first' })).statusCode, 201);
  t.is(await resolver.resolve('ROTATED', { orgId }), 'first');
  t.is(await resolver.resolve('ROTATED', { orgId }), 'first');
  t.is((await admin.put(`/orgs/${orgId}/secrets/ROTATED`, { value: 'second' })).statusCode, 200);
  t.is(await resolver.resolve('ROTATED', { orgId }), 'second');
  t.is((await admin.delete(`/orgs/${orgId}/secrets/ROTATED`)).statusCode, 204);
  await t.throwsAsync(resolver.resolve('ROTATED', { orgId }), { instanceOf: SecretMissing });
});

test("the org is the project's own; another org cannot be named to reach its secrets", async (t) => {
  t.is(await resolver.resolve('ORG_SYSTEM', { projectId }), 'org-wins');
  const err = await t.throwsAsync(resolver.resolve('ORG_SYSTEM', { projectId: otherOrgProject, orgId }));
  t.is(Boom.isBoom(err) && err.output.statusCode, 422);
  await t.throwsAsync(resolver.resolve('OTHER_PROJECT', { projectId, userId }), { message: /OTHER_PROJECT not found/ });
});

test('a missing secret is a 422 naming it and every scope searched', async (t) => {
  const err = await t.throwsAsync(resolver.resolve('NOT_THERE', { projectId, userId }));
  t.true(Boom.isBoom(err));
  t.is((err as Boom.Boom).output.statusCode, 422);
  t.is(err!.message, `secret NOT_THERE not found; searched project ${projectId}, user ${userId}, org ${orgId}, system`);
  const bare = await t.throwsAsync(resolver.resolve('NOT_THERE', {}));
  t.is(bare!.message, 'secret NOT_THERE not found; searched system');
});

test('expand replaces every ${secret.NAME}', async (t) => {
  const text = 'a=${secret.ALL_FOUR} b=${secret.ORG_SYSTEM} again=${secret.ALL_FOUR} keep=${env.HOME} $secret.ALL_FOUR';
  t.is(await resolver.expand(text, { projectId, userId }), 'a=from-project b=org-wins again=from-project keep=${env.HOME} $secret.ALL_FOUR');
  t.is(await resolver.expand('no expressions', {}), 'no expressions');
  await t.throwsAsync(resolver.expand('x=${secret.ALL_FOUR} y=${secret.GONE}', { projectId }), { message: /^secret GONE not found; searched project/ });
  const bad = await t.throwsAsync(resolver.expand('${secret.lower}', { projectId }));
  t.is((bad as Boom.Boom).output.statusCode, 422);
  t.regex(bad!.message, /\$\{secret\.lower\} is not a valid secret expression/);
});

test('a missing secret is a SecretMissing carrying the name and the scopes searched', async (t) => {
  const err = await t.throwsAsync(resolver.resolve('NOT_THERE', { projectId }), { instanceOf: SecretMissing });
  t.is(err!.secret, 'NOT_THERE');
  t.deepEqual(err!.searched, [`project ${projectId}`, `org ${orgId}`, 'system']);
});

test('a system secret not shared with jobs is SecretNotShared for a job, and resolves for svc itself (internal)', async (t) => {
  for (const ctx of [{ projectId, userId }, { orgId }, {}]) {
    const err = await t.throwsAsync(resolver.resolve('SYSTEM_UNSHARED', ctx), { instanceOf: SecretNotShared });
    t.true(err instanceof SecretMissing, 'missing as far as the job goes');
    t.is((err as SecretNotShared).output.statusCode, 422);
    t.is(err!.message, 'secret SYSTEM_UNSHARED exists only at system scope and is not shared with jobs; a system admin can set shared_with_jobs');
  }
  await t.throwsAsync(resolver.expand('k=${secret.SYSTEM_ONLY} u=${secret.SYSTEM_UNSHARED}', { projectId }), { instanceOf: SecretNotShared });
  t.is(await resolver.resolve('SYSTEM_UNSHARED', { projectId, internal: true }), 'system-unshared-value');
  t.is(await resolver.resolve('CHATAPP_SIGNING_SECRET', { internal: true }), 'chat-signing-value');
});

test("svc's own integration secrets never resolve for a job, even with the flag set behind the API", async (t) => {
  await ctx.srv.kernel.db('secrets').where({ scope: 'system', name: 'CHATAPP_SIGNING_SECRET' }).update({ shared_with_jobs: true });
  try {
    const err = await t.throwsAsync(resolver.resolve('CHATAPP_SIGNING_SECRET', { projectId }), { instanceOf: SecretNotShared });
    t.true((err as SecretNotShared).integration);
    t.regex(err!.message, /it is one of svc's own integration secrets, which never reach jobs$/);
  } finally {
    await ctx.srv.kernel.db('secrets').where({ scope: 'system', name: 'CHATAPP_SIGNING_SECRET' }).update({ shared_with_jobs: false });
  }
});

test('the database refuses shared_with_jobs on a secret of another scope', async (t) => {
  await t.throwsAsync(ctx.srv.kernel.db('secrets').where({ scope: 'org', name: 'ORG_SYSTEM' }).update({ shared_with_jobs: true }), {
    message: /secrets_shared_with_jobs_check/,
  });
});
