import test from 'ava';
import { as } from '../support/server.ts';
import { newUser, setup, type Ctx, type User } from '../orgs/helpers.ts';
import { MachineTokens } from '../../core/auth/machine-tokens.ts';

let ctx: Ctx;
let owner: User;
let orgId = '';
let projectId = '';
let otherProjectId = '';

test.before(async () => {
  ctx = await setup();
  owner = await newUser(ctx, 'sa-owner');
  orgId = (await owner.api.post('/orgs', { name: 'Bots' })).body.id;
  projectId = (await owner.api.post('/projects', { org_id: orgId, name: 'Bot one', slug: 'botone' })).body.id;
  otherProjectId = (await owner.api.post('/projects', { org_id: orgId, name: 'Bot two', slug: 'bottwo' })).body.id;
});
test.after.always(async () => {
  await ctx?.srv.stop();
});

const sas = (collection = 'service-accounts') => `/orgs/${orgId}/${collection}`;

async function botWithToken(name: string, body: Record<string, unknown>) {
  const sa = (await owner.api.post(sas(), { name, role: 'member' })).body;
  const minted = await owner.api.post(`${sas()}/${sa.id}/tokens`, body);
  return { sa, minted, api: as(ctx.srv.server, minted.body.token) };
}

test.serial('a project-scoped token with explicit permissions does exactly that: its project, its list', async (t) => {
  const { minted, api } = await botWithToken('ci-bot', {
    scope: { type: 'project', id: projectId },
    permissions: ['jobs:read', 'jobs:create', 'projects:read'],
    ttl_days: 7,
  });
  t.is(minted.statusCode, 201, JSON.stringify(minted.body));
  t.like(minted.body, { scope: { type: 'project', id: projectId }, permissions: ['jobs:read', 'jobs:create', 'projects:read'], revoked_at: null });
  t.true(new Date(minted.body.expires_at).getTime() > Date.now() + 6.9 * 86_400_000);
  t.is((await api.post(`/projects/${projectId}/jobs`, { description: 'from a bot' })).statusCode, 201);
  const patch = await api.patch(`/projects/${projectId}`, { name: 'renamed' });
  t.is(patch.statusCode, 403, 'member could, the token list cannot');
  t.is(patch.body.message, 'missing permission projects:write');
  t.is((await api.get(`/projects/${otherProjectId}`)).statusCode, 404, 'outside its scope');
  t.is((await api.get(`/orgs/${orgId}`)).statusCode, 404);
  t.deepEqual(
    (await api.get('/projects')).body.data.map((p: { id: string }) => p.id),
    [projectId],
  );
  const me = await api.get('/auth/me');
  t.is(me.statusCode, 403);
  t.regex(me.body.message, /describes a user; this is a service account token/);
  t.is((await api.post('/orgs', { name: 'Bot org' })).statusCode, 403, 'a scoped token creates no orgs');
});

test.serial('tokens are listed without values and revoking one stops it at once', async (t) => {
  const { sa, minted, api } = await botWithToken('revokee', { permissions: ['orgs:read'] });
  t.is((await api.get(`/orgs/${orgId}`)).statusCode, 200);
  const listed = await owner.api.get(`${sas()}/${sa.id}/tokens`);
  t.is(listed.body.data.length, 1);
  t.false(JSON.stringify(listed.body).includes(minted.body.token));
  t.is(listed.body.data[0].token, undefined);
  t.is((await owner.api.delete(`${sas()}/${sa.id}/tokens/${minted.body.id}`)).statusCode, 204);
  t.is((await owner.api.delete(`${sas()}/${sa.id}/tokens/${minted.body.id}`)).statusCode, 204, 'idempotent');
  const after = await api.get(`/orgs/${orgId}`);
  t.is(after.statusCode, 401);
  t.is(after.body.message, 'token revoked');
});

test.serial('minting: TTL 1-90, permissions held by the minter and by the account, scope inside the org', async (t) => {
  const sa = (await owner.api.post(sas(), { name: 'limited', role: 'member' })).body;
  const mint = (body: Record<string, unknown>) => owner.api.post(`${sas()}/${sa.id}/tokens`, body);
  t.is((await mint({ permissions: ['jobs:read'], ttl_days: 91 })).statusCode, 400);
  t.is((await mint({ permissions: ['jobs:read'], ttl_days: 0 })).statusCode, 400);
  t.is((await mint({ permissions: [] })).statusCode, 400);
  const beyond = await mint({ permissions: ['jobs:read', 'secrets:admin'] });
  t.is(beyond.statusCode, 422);
  t.regex(beyond.body.message, /does not hold secrets:admin/);
  const foreign = (await ctx.srv.kernel.db('orgs').whereNot({ id: orgId }).first('id')).id;
  t.is((await mint({ permissions: ['jobs:read'], scope: { type: 'org', id: foreign } })).statusCode, 422);
  t.is((await owner.api.get(`${sas()}/${sa.id}/tokens`)).body.pagination.total, 0, 'nothing minted');
  const plain = await newUser(ctx, 'sa-member');
  await owner.api.post(`/orgs/${orgId}/members`, { email: plain.email, role: 'member' });
  const denied = await plain.api.post(`${sas()}/${sa.id}/tokens`, { permissions: ['jobs:read'] });
  t.is(denied.statusCode, 403);
  t.is(denied.body.message, 'missing permission access:admin');
});

test.serial('service-principals is the same collection; deleting an account stops its tokens; cross-org ids are 404', async (t) => {
  const { sa, api } = await botWithToken('alias', { permissions: ['orgs:read'] });
  t.is((await owner.api.get(`${sas('service-principals')}/${sa.id}`)).body.name, 'alias');
  t.true((await owner.api.get(sas('service-principals'))).body.data.some((a: { id: string }) => a.id === sa.id));
  t.is((await owner.api.post(sas(), { name: 'alias' })).statusCode, 409);
  const orphanProject = await owner.api.post(sas(), { name: 'no-role', project_id: projectId });
  t.is(orphanProject.statusCode, 400);
  t.regex(orphanProject.body.message, /"project_id" missing required peer "role"/);
  t.is((await owner.api.delete(`/orgs/${orgId}/access/groups/grp_01h455vb4pex5vsknk084sn02q/members/user/not-an-id`)).statusCode, 400);
  const stranger = await newUser(ctx, 'sa-stranger');
  const theirs = (await stranger.api.post('/orgs', { name: 'Theirs' })).body.id;
  t.is((await stranger.api.get(`/orgs/${theirs}/service-accounts/${sa.id}`)).statusCode, 404);
  t.is((await stranger.api.get(`${sas()}/${sa.id}`)).statusCode, 404);
  t.is((await owner.api.delete(`${sas()}/${sa.id}`)).statusCode, 204);
  t.is((await api.get(`/orgs/${orgId}`)).statusCode, 401);
});

test.serial('can and explain answer for service accounts from their bindings', async (t) => {
  const sa = (await owner.api.post(sas(), { name: 'checked', role: 'member', project_id: projectId })).body;
  const q = (permission: string, project?: string) =>
    owner.api.get(
      `/orgs/${orgId}/access/can?principal_type=service_account&principal_id=${sa.id}&permission=${permission}${project ? `&project_id=${project}` : ''}`,
    );
  t.true((await q('jobs:create', projectId)).body.allowed);
  t.false((await q('jobs:create', otherProjectId)).body.allowed);
  t.false((await q('orgs:read')).body.allowed);
});

test.serial('a job token reaches its own job with its listed permissions, and stops when the attempt ends', async (t) => {
  const job = (await owner.api.post(`/projects/${projectId}/jobs`, { description: 'tokened' })).body;
  const other = (await owner.api.post(`/projects/${projectId}/jobs`, { description: 'neighbour' })).body;
  const claimed = (await owner.api.post(`/jobs/${job.id}/claim`, {})).body;
  const { token } = await ctx.srv.kernel.container.resolve(MachineTokens).signJobToken({
    jobId: job.id,
    attemptId: claimed.attempt.id,
    projectId,
    orgId,
    permissions: ['jobs:read', 'jobs:create'],
    ttlSeconds: 3600,
  });
  const api = as(ctx.srv.server, token);
  t.is((await api.get(`/jobs/${job.id}`)).statusCode, 200);
  t.is((await api.get(`/jobs/${job.id}/context`)).statusCode, 200);
  t.is((await api.get(`/jobs/${other.id}`)).statusCode, 404, 'another job');
  // Project routes too: no other job of the project, listed or named.
  const listed = await api.get(`/projects/${projectId}/jobs`);
  t.is(listed.statusCode, 200);
  t.deepEqual(
    listed.body.data.map((j: { id: string }) => j.id),
    [job.id],
    'the list holds its own job only',
  );
  t.is((await api.get(`/projects/${projectId}/jobs/${other.id}/attempts`)).statusCode, 404, "another job's attempts");
  t.is((await api.get(`/projects/${projectId}/jobs/${other.id}/attempts/1`)).statusCode, 404, "another job's attempt");
  t.is((await api.get(`/projects/${projectId}/jobs/${job.id}/attempts`)).statusCode, 200, 'its own attempts');
  t.is((await api.get(`/projects/${otherProjectId}/jobs`)).statusCode, 404, 'another project');
  t.is((await api.get(`/orgs/${orgId}`)).statusCode, 404, 'the org');
  t.is((await api.post(`/jobs/${job.id}/submit`, { summary: 'x' })).statusCode, 403, 'not in its list');
  t.is((await api.post(`/projects/${projectId}/jobs`, { description: 'child', parent_id: job.id })).statusCode, 201);
  const released = await owner.api.post(`/jobs/${job.id}/release`, { attempt_id: claimed.attempt.id, lease_token: claimed.attempt.lease_token });
  t.is(released.statusCode, 200, JSON.stringify(released.body));
  const after = await api.get(`/jobs/${job.id}`);
  t.is(after.statusCode, 401);
  t.is(after.body.message, 'the attempt of this job token has ended');
});
