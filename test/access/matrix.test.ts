import test from 'ava';
import { ROLE_PERMISSIONS, type Permission } from '../../core/auth/permissions.ts';
import { MachineTokens } from '../../core/auth/machine-tokens.ts';
import { as, type Reply } from '../support/server.ts';
import { newUser, setup, type Ctx } from '../orgs/helpers.ts';

/**
 * The role × route × tenant matrix: every actor calls every route on its own org and on a foreign
 * one. Expected: success where the actor's effective permissions hold the route's permission, 403
 * naming it where the target is visible but the permission is missing, 404 where it is not visible.
 */

type Api = ReturnType<typeof as>;
interface Tenant {
  org: string;
  project: string;
  job: string;
}
interface Route {
  permission: Permission;
  level: 'org' | 'project' | 'job';
  name: string;
  call: (api: Api, t: Tenant, n: number) => Promise<Reply>;
}

const ROUTES: Route[] = [
  { permission: 'orgs:read', level: 'org', name: 'GET org', call: (api, t) => api.get(`/orgs/${t.org}`) },
  { permission: 'orgs:write', level: 'org', name: 'PATCH org', call: (api, t) => api.patch(`/orgs/${t.org}`, { name: 'Same' }) },
  { permission: 'members:read', level: 'org', name: 'GET org members', call: (api, t) => api.get(`/orgs/${t.org}/members`) },
  {
    permission: 'projects:create',
    level: 'org',
    name: 'POST project',
    call: (api, t, n) => api.post('/projects', { org_id: t.org, name: `P ${n}`, slug: `mx${n}` }),
  },
  { permission: 'access:read', level: 'org', name: 'GET roles', call: (api, t) => api.get(`/orgs/${t.org}/access/roles`) },
  { permission: 'access:admin', level: 'org', name: 'POST group', call: (api, t, n) => api.post(`/orgs/${t.org}/access/groups`, { name: `g${n}` }) },
  { permission: 'access:read', level: 'org', name: 'GET service accounts', call: (api, t) => api.get(`/orgs/${t.org}/service-accounts`) },
  {
    permission: 'secrets:admin',
    level: 'org',
    name: 'POST org secret',
    call: (api, t, n) => api.post(`/orgs/${t.org}/secrets`, { name: `MX_${n}`, value: 'v' }),
  },
  { permission: 'projects:read', level: 'project', name: 'GET project', call: (api, t) => api.get(`/projects/${t.project}`) },
  { permission: 'projects:write', level: 'project', name: 'PATCH project', call: (api, t) => api.patch(`/projects/${t.project}`, { name: 'Same' }) },
  { permission: 'jobs:read', level: 'project', name: 'GET jobs', call: (api, t) => api.get(`/projects/${t.project}/jobs`) },
  { permission: 'jobs:create', level: 'project', name: 'POST job', call: (api, t) => api.post(`/projects/${t.project}/jobs`, { description: 'matrix' }) },
  { permission: 'secrets:read', level: 'project', name: 'GET project secrets', call: (api, t) => api.get(`/projects/${t.project}/secrets`) },
  {
    permission: 'secrets:admin',
    level: 'project',
    name: 'POST project secret',
    call: (api, t, n) => api.post(`/projects/${t.project}/secrets`, { name: `MX_${n}`, value: 'v' }),
  },
  { permission: 'jobs:read', level: 'job', name: 'GET job', call: (api, t) => api.get(`/jobs/${t.job}`) },
  { permission: 'jobs:read', level: 'job', name: 'GET job context', call: (api, t) => api.get(`/jobs/${t.job}/context`) },
  { permission: 'jobs:write', level: 'job', name: 'PATCH job', call: (api, t) => api.patch(`/jobs/${t.job}`, { priority: 1 }) },
];

interface Actor {
  name: string;
  api: Api;
  /** What it may do in its own tenant, at each level; null: the level is invisible to it. */
  holds: (level: Route['level']) => ReadonlySet<Permission> | null;
}

let ctx: Ctx;
let home: Tenant;
let foreign: Tenant;
const actors: Actor[] = [];

async function tenant(api: Api, name: string, slug: string): Promise<Tenant> {
  const org = (await api.post('/orgs', { name })).body.id;
  const project = (await api.post('/projects', { org_id: org, name, slug })).body.id;
  const job = (await api.post(`/projects/${project}/jobs`, { description: 'the job' })).body.id;
  return { org, project, job };
}

test.before(async () => {
  ctx = await setup();
  const owner = await newUser(ctx, 'mx-owner');
  home = await tenant(owner.api, 'Home', 'mxhome');
  foreign = await tenant((await newUser(ctx, 'mx-foreign')).api, 'Foreign', 'mxfor');
  const everywhere = (set: ReadonlySet<Permission> | null) => () => set;
  actors.push({ name: 'owner', api: owner.api, holds: everywhere(ROLE_PERMISSIONS.owner) });
  for (const role of ['admin', 'member'] as const) {
    const u = await newUser(ctx, `mx-${role}`);
    await owner.api.post(`/orgs/${home.org}/members`, { email: u.email, role });
    actors.push({ name: role, api: u.api, holds: everywhere(ROLE_PERMISSIONS[role]) });
  }
  actors.push({ name: 'non-member', api: (await newUser(ctx, 'mx-none')).api, holds: everywhere(null) });

  const sa = (await owner.api.post(`/orgs/${home.org}/service-accounts`, { name: 'mx-bot', role: 'admin' })).body;
  const mint = async (permissions: Permission[]) => (await owner.api.post(`/orgs/${home.org}/service-accounts/${sa.id}/tokens`, { permissions })).body.token;
  const all = [...ROLE_PERMISSIONS.admin];
  actors.push({ name: 'service account with the permissions', api: as(ctx.srv.server, await mint(all)), holds: everywhere(new Set(all)) });
  actors.push({ name: 'service account without them', api: as(ctx.srv.server, await mint(['orgs:read'])), holds: everywhere(new Set(['orgs:read'])) });

  const claimed = (await owner.api.post(`/jobs/${home.job}/claim`, {})).body;
  const jobPermissions: Permission[] = ['jobs:read', 'jobs:create', 'secrets:read'];
  const { token } = await ctx.srv.kernel.container.resolve(MachineTokens).signJobToken({
    jobId: home.job,
    attemptId: claimed.attempt.id,
    projectId: home.project,
    orgId: home.org,
    permissions: jobPermissions,
    ttlSeconds: 3600,
  });
  actors.push({ name: 'job token', api: as(ctx.srv.server, token), holds: (level) => (level === 'org' ? null : new Set(jobPermissions)) });
});
test.after.always(async () => {
  await ctx?.srv.stop();
});

let n = 0;
for (const route of ROUTES) {
  test.serial(`matrix: ${route.name} (${route.permission})`, async (t) => {
    for (const actor of actors) {
      const held = actor.holds(route.level);
      const own = await route.call(actor.api, home, ++n);
      if (!held) t.is(own.statusCode, 404, `${actor.name}: invisible → 404`);
      else if (held.has(route.permission)) t.true(own.statusCode < 300, `${actor.name}: allowed, got ${own.statusCode} ${JSON.stringify(own.body)}`);
      else {
        t.is(own.statusCode, 403, `${actor.name}: visible without ${route.permission}`);
        t.is(own.body?.message, `missing permission ${route.permission}`, actor.name);
      }
      const cross = await route.call(actor.api, foreign, ++n);
      t.is(cross.statusCode, 404, `${actor.name} on a foreign org: ${JSON.stringify(cross.body)}`);
    }
  });
}

test.serial('a job token reaches no other job of its own project', async (t) => {
  const jobActor = actors.find((a) => a.name === 'job token')!;
  const owner = actors[0];
  const other = (await owner.api.post(`/projects/${home.project}/jobs`, { description: 'neighbour' })).body.id;
  t.is((await jobActor.api.get(`/jobs/${other}`)).statusCode, 404);
});
