import test from 'ava';
import { as, call } from '../support/server.ts';
import { assertError, memberOf, newUser } from '../orgs/helpers.ts';
import { bindTeam, setSecret, setup, type Ctx } from './helpers.ts';

let ctx: Ctx;
let admin: ReturnType<typeof as>;
let orgA: string;
let orgB: string;
let projectA: string;
let projectA2: string;
let projectB: string;

const UNKNOWN_PROJECT = 'proj_01h455vb4pex5vsknk084sn02q';
const UNKNOWN_ROUTE = 'route_01h455vb4pex5vsknk084sn02q';
const ROUTE_FIELDS = ['channel', 'created_at', 'created_by', 'id', 'org_id', 'project_id', 'team_id'];
const SIGNING_SECRET = 'routes-test-signing-secret';

test.before(async () => {
  ctx = await setup();
  admin = as(ctx.srv.server, ctx.adminToken);
  await setSecret(ctx, '/system', 'CHATAPP_SIGNING_SECRET', SIGNING_SECRET);
  orgA = (await admin.post('/orgs', { name: 'Routes A' })).body.id;
  orgB = (await admin.post('/orgs', { name: 'Routes B' })).body.id;
  projectA = (await admin.post('/projects', { org_id: orgA, name: 'A one', slug: 'rtea' })).body.id;
  projectA2 = (await admin.post('/projects', { org_id: orgA, name: 'A two', slug: 'rteb' })).body.id;
  projectB = (await admin.post('/projects', { org_id: orgB, name: 'B one', slug: 'rtec' })).body.id;
});
test.after.always(() => ctx?.srv.stop());

let teams = 0;
const newTeam = () => `T${process.pid}R${++teams}`;
/** A new team, bound to `orgId` through the code flow (a route needs the team bound to its org). */
async function boundTeam(orgId = orgA): Promise<string> {
  const team = newTeam();
  await bindTeam(ctx.srv.server, admin, orgId, team, SIGNING_SECRET);
  return team;
}

test('create, read, list and delete a route', async (t) => {
  const team = await boundTeam();
  const created = await admin.post(`/projects/${projectA}/routes`, { team_id: team, channel: 'C0DEPLOYS' });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  t.deepEqual(Object.keys(created.body).sort(), ROUTE_FIELDS);
  t.like(created.body, { org_id: orgA, project_id: projectA, team_id: team, channel: 'C0DEPLOYS', created_by: ctx.adminId });
  t.regex(created.body.id, /^route_/);
  const teamWide = await admin.post(`/projects/${projectA}/routes`, { team_id: team });
  t.is(teamWide.statusCode, 201);
  t.is(teamWide.body.channel, null);

  t.deepEqual((await admin.get(`/projects/${projectA}/routes/${created.body.id}`)).body, created.body);
  const list = await admin.get(`/projects/${projectA}/routes?team_id=${team}`);
  t.deepEqual(
    list.body.data.map((r: { id: string }) => r.id),
    [teamWide.body.id, created.body.id],
    'newest first',
  );
  t.like(list.body.pagination, { limit: 10, offset: 0, count: 2, total: 2, has_more: false });
  const page = await admin.get(`/projects/${projectA}/routes?team_id=${team}&limit=1&offset=1`);
  t.like(page.body.pagination, { count: 1, total: 2, has_more: false });

  t.is((await admin.delete(`/projects/${projectA}/routes/${created.body.id}`)).statusCode, 204);
  assertError(t, await admin.get(`/projects/${projectA}/routes/${created.body.id}`), 404, `chat route ${created.body.id} not found`);
  assertError(t, await admin.delete(`/projects/${projectA}/routes/${created.body.id}`), 404, `chat route ${created.body.id} not found`);
});

test('bad input is 400 with the field, and nothing is written', async (t) => {
  assertError(t, await admin.post(`/projects/${projectA}/routes`, {}), 400, '"team_id" is required');
  assertError(t, await admin.post(`/projects/${projectA}/routes`, { team_id: 'T 1' }), 400, /"team_id" with value "T 1" fails to match the chat app id/);
  assertError(
    t,
    await admin.post(`/projects/${projectA}/routes`, { team_id: 'T1', channel: '#general' }),
    400,
    /"channel" with value "#general" fails to match/,
  );
  assertError(t, await admin.post(`/projects/${projectA}/routes`, { team_id: 'T1', project_id: projectB }), 400, '"project_id" is not allowed');
  assertError(t, await admin.post(`/projects/${projectA}/routes`, { team_id: 'x'.repeat(65) }), 400, /fails to match/);
  assertError(t, await admin.get(`/projects/${projectA}/routes/not-a-route`), 400, /"route_id" with value "not-a-route" fails to match/);
  assertError(t, await admin.get(`/projects/${projectA}/routes?include_deleted=true`), 400, '"include_deleted" is not allowed');
  const res = await call(ctx.srv.server, 'POST', `/projects/${projectA}/routes`, '{"team_id": ', ctx.adminToken);
  t.is(res.statusCode, 400);
  t.deepEqual(
    await ctx.srv.kernel
      .db('chat_routes')
      .whereIn('team_id', ['T1', 'T 1', 'x'.repeat(65)])
      .select('id'),
    [],
  );
});

test('a team and channel route to one project; only the org the team is bound to routes it (422)', async (t) => {
  const team = await boundTeam();
  t.is((await admin.post(`/projects/${projectA}/routes`, { team_id: team })).statusCode, 201);
  assertError(t, await admin.post(`/projects/${projectA2}/routes`, { team_id: team }), 409, `chat team ${team} is already routed`);
  t.is(
    (await admin.post(`/projects/${projectA2}/routes`, { team_id: team, channel: 'C0OPS' })).statusCode,
    201,
    'another project of the org takes one channel',
  );
  assertError(
    t,
    await admin.post(`/projects/${projectA}/routes`, { team_id: team, channel: 'C0OPS' }),
    409,
    `channel C0OPS of chat team ${team} is already routed`,
  );
  assertError(
    t,
    await admin.post(`/projects/${projectB}/routes`, { team_id: team, channel: 'C0OTHER' }),
    422,
    `chat team ${team} is not bound to this org; bind it first: POST /orgs/${orgB}/chat-teams {"team_id": "${team}"} and post "bind <code>" in the team`,
  );
  t.deepEqual(await ctx.srv.kernel.db('chat_routes').where({ team_id: team }).distinct('org_id'), [{ org_id: orgA }], 'nothing written for org B');
});

test('two projects of the bound org routing one team-wide at once: exactly one wins', async (t) => {
  const team = await boundTeam();
  const replies = await Promise.all([
    admin.post(`/projects/${projectA}/routes`, { team_id: team }),
    admin.post(`/projects/${projectA2}/routes`, { team_id: team }),
  ]);
  t.deepEqual(replies.map((r) => r.statusCode).sort(), [201, 409]);
  t.is((await ctx.srv.kernel.db('chat_routes').where({ team_id: team })).length, 1);
});

test('unknown and deleted projects', async (t) => {
  assertError(t, await admin.get(`/projects/${UNKNOWN_PROJECT}/routes`), 404, `project ${UNKNOWN_PROJECT} not found`);
  assertError(t, await admin.post(`/projects/${UNKNOWN_PROJECT}/routes`, { team_id: 'T1' }), 404, `project ${UNKNOWN_PROJECT} not found`);
  assertError(t, await admin.get(`/projects/${projectA}/routes/${UNKNOWN_ROUTE}`), 404, `chat route ${UNKNOWN_ROUTE} not found`);
  const gone = (await admin.post('/projects', { org_id: orgA, name: 'Gone', slug: 'rtegone' })).body.id;
  t.is((await admin.delete(`/projects/${gone}`)).statusCode, 204);
  assertError(t, await admin.post(`/projects/${gone}/routes`, { team_id: await boundTeam() }), 422, `project ${gone} is deleted`);
});

test("tenant isolation: another org's members see none of the routes; a route is reached only through its own project", async (t) => {
  const routeA = (await admin.post(`/projects/${projectA}/routes`, { team_id: await boundTeam() })).body;
  t.truthy(routeA.id);
  const outsider = await memberOf(ctx, orgB, 'outsider', 'owner');
  const nobody = await newUser(ctx, 'nobody');
  for (const user of [outsider, nobody]) {
    assertError(t, await user.api.get(`/projects/${projectA}/routes`), 404, `project ${projectA} not found`);
    assertError(t, await user.api.get(`/projects/${projectA}/routes/${routeA.id}`), 404, `project ${projectA} not found`);
    assertError(t, await user.api.delete(`/projects/${projectA}/routes/${routeA.id}`), 404, `project ${projectA} not found`);
    assertError(t, await user.api.post(`/projects/${projectA}/routes`, { team_id: newTeam() }), 404, `project ${projectA} not found`);
  }
  // The owner of org B may use their own project's path, but not to reach org A's route.
  assertError(t, await outsider.api.get(`/projects/${projectB}/routes/${routeA.id}`), 404, `chat route ${routeA.id} not found`);
  assertError(t, await outsider.api.delete(`/projects/${projectB}/routes/${routeA.id}`), 404, `chat route ${routeA.id} not found`);
  t.deepEqual(
    (await outsider.api.get(`/projects/${projectB}/routes`)).body.data.filter((r: { org_id: string }) => r.org_id !== orgB),
    [],
  );
  assertError(t, await admin.get(`/projects/${projectA2}/routes/${routeA.id}`), 404, `chat route ${routeA.id} not found`);
  t.truthy(await ctx.srv.kernel.db('chat_routes').where({ id: routeA.id }).first(), 'still there');
});

test('members read routes; changing them needs routes:write (admins)', async (t) => {
  const member = await memberOf(ctx, orgA, 'reader');
  const orgAdmin = await memberOf(ctx, orgA, 'router', 'admin');
  const route = (await orgAdmin.api.post(`/projects/${projectA}/routes`, { team_id: await boundTeam() })).body;
  t.truthy(route.id);
  t.is((await member.api.get(`/projects/${projectA}/routes`)).statusCode, 200);
  t.is((await member.api.get(`/projects/${projectA}/routes/${route.id}`)).statusCode, 200);
  assertError(t, await member.api.post(`/projects/${projectA}/routes`, { team_id: newTeam() }), 403, 'missing permission routes:write');
  assertError(t, await member.api.delete(`/projects/${projectA}/routes/${route.id}`), 403, 'missing permission routes:write');
  assertError(t, await call(ctx.srv.server, 'GET', `/projects/${projectA}/routes`), 401, 'missing bearer token');
  t.is((await orgAdmin.api.delete(`/projects/${projectA}/routes/${route.id}`)).statusCode, 204);
});
