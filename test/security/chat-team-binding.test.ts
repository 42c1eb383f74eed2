/**
 * Issue 29 item 3: an org may route a chat team only after the team itself agreed. The org asks for
 * a one-time code; the binding becomes active when that code arrives from that team in a signed
 * chat event. Attacked here: squatting a team id, codes from another team, expired and reused codes.
 */
import test from 'ava';
import { assertError, memberOf, type User } from '../orgs/helpers.ts';
import { up as bindingsMigration } from '../../migrations/029_chat_team_bindings.ts';
import { as, chatHeaders, deliver, eventsOf, newProject, setSecret, setup, type Ctx } from '../integrations/helpers.ts';

let ctx: Ctx;
let admin: ReturnType<typeof as>;
let orgA: string;
let orgB: string;
let ownerB: User;
const SIGNING_SECRET = 'binding-test-signing-secret-0001';
const GATEWAY = '/gateway/providers/chatapp/webhook';
const NOT_BOUND = (team: string, org: string) =>
  `chat team ${team} is not bound to this org; bind it first: POST /orgs/${org}/chat-teams {"team_id": "${team}"} and post "bind <code>" in the team`;
const NO_BIND = 'the binding code is unknown, expired, already used or not for this team: nothing was bound';

test.before(async () => {
  ctx = await setup();
  admin = as(ctx.srv.server, ctx.adminToken);
  await setSecret(ctx, '/system', 'CHATAPP_SIGNING_SECRET', SIGNING_SECRET);
  orgA = ctx.orgId;
  orgB = (await admin.post('/orgs', { name: 'Squatters' })).body.id;
  ownerB = await memberOf(ctx, orgB, 'squatter', 'owner');
});
test.after.always(() => ctx?.srv.stop());

let teams = 0;
const newTeam = () => `T${process.pid}B${++teams}`;
let seq = 0;

/** A signed message from `team`, as the chat app sends it. */
function say(team: string, text: string, channel = 'C0GENERAL') {
  const body = JSON.stringify({
    type: 'event_callback',
    team_id: team,
    event_id: `Ev${process.pid}B${++seq}`,
    event: { type: 'message', channel, user: 'U0TEAMADMIN', text, ts: `1718000000.${String(++seq).padStart(6, '0')}` },
  });
  return deliver(ctx.srv.server, GATEWAY, body, chatHeaders(SIGNING_SECRET, body));
}

const requestCode = (orgId: string, team: string, api = admin) => api.post(`/orgs/${orgId}/chat-teams`, { team_id: team });
const binding = (team: string) => ctx.srv.kernel.db('chat_team_bindings').where({ team_id: team }).first();

test.serial('the migration binds a team routed by exactly one org; a team two orgs route stays unbound until one binds it', async (t) => {
  // Serial tests run before the others: the tables are rebuilt by the migration itself, over routes an old server wrote.
  const db = ctx.srv.kernel.db;
  const [one, two] = [newTeam(), newTeam()];
  const [pA, pA2, pB] = [await newProject(ctx, orgA), await newProject(ctx, orgA), await newProject(ctx, orgB)];
  await db.schema.dropTable('chat_team_binding_codes');
  await db.schema.dropTable('chat_team_bindings');
  let n = 0;
  const old = (org_id: string, project_id: string, team_id: string, channel: string | null) => ({
    id: `route_old${++n}`,
    org_id,
    project_id,
    team_id,
    channel,
  });
  await db('chat_routes').insert([old(orgA, pA, one, null), old(orgA, pA2, one, 'C0X'), old(orgA, pA, two, 'C0A'), old(orgB, pB, two, 'C0B')]);
  await bindingsMigration(db);

  t.like(await binding(one), { org_id: orgA, bound_via: 'migration', bound_by: null });
  t.is(await binding(two), undefined, 'two orgs route it: no binding');
  t.is((await say(one, 'still here', 'C0X')).body.project_id, pA2, 'the single-org team keeps working');
  t.is((await say(one, 'still here', 'C0Y')).body.project_id, pA);
  t.is((await say(two, 'anyone?', 'C0A')).statusCode, 202);
  t.is((await say(two, 'anyone?', 'C0B')).statusCode, 202);

  const code = (await requestCode(orgB, two, ownerB.api)).body.code;
  t.is((await say(two, `bind ${code}`)).statusCode, 200);
  t.deepEqual(await db('chat_routes').where({ team_id: two }).pluck('project_id'), [pB], "org A's unagreed route is removed when B binds");
  t.is((await say(two, 'now', 'C0B')).body.project_id, pB);
  t.is((await say(two, 'now', 'C0A')).statusCode, 202);
});

test('squatting: org B routes org A’s team before A does → 422, and the team’s messages never reach org B', async (t) => {
  const team = newTeam();
  const projectA = await newProject(ctx, orgA);
  const projectB = await newProject(ctx, orgB);
  assertError(t, await ownerB.api.post(`/projects/${projectB}/routes`, { team_id: team }), 422, NOT_BOUND(team, orgB));
  assertError(t, await ownerB.api.post(`/projects/${projectB}/routes`, { team_id: team, channel: 'C0GENERAL' }), 422, NOT_BOUND(team, orgB));
  t.is(await ctx.srv.kernel.db('chat_routes').where({ team_id: team }).first(), undefined, 'no route written');

  const unrouted = await say(team, 'deploy please');
  t.is(unrouted.statusCode, 202);

  // Org A binds its team for real; B's request for a code is then refused, and so is its route.
  const code = (await requestCode(orgA, team)).body.code;
  t.is((await say(team, `bind ${code}`)).statusCode, 200);
  assertError(t, await requestCode(orgB, team, ownerB.api), 409, `chat team ${team} is bound to another org; it must unbind it first`);
  assertError(t, await ownerB.api.post(`/projects/${projectB}/routes`, { team_id: team }), 422, NOT_BOUND(team, orgB));
  t.is((await admin.post(`/projects/${projectA}/routes`, { team_id: team })).statusCode, 201);

  const delivered = await say(team, 'deploy please');
  t.is(delivered.statusCode, 201);
  t.is(delivered.body.project_id, projectA);
  t.is((await eventsOf(ctx, projectB)).length, 0, 'nothing reached org B');
});

test('a route left from before binding existed (or of an org that is not bound) never receives the team’s messages', async (t) => {
  const team = newTeam();
  const projectB = await newProject(ctx, orgB);
  // As an old server would have written it: a route with no binding behind it.
  await ctx.srv.kernel
    .db('chat_routes')
    .insert({ id: `route_01h455vb4pex5vsknk084sn0${String(teams).padStart(2, '0')}`, org_id: orgB, project_id: projectB, team_id: team, channel: null });
  t.is((await say(team, 'hello')).statusCode, 202);
  const code = (await requestCode(orgA, team)).body.code;
  t.is((await say(team, `bind ${code}`)).statusCode, 200);
  t.is((await say(team, 'hello again')).statusCode, 202, "bound to A, which routes nothing: B's stale route is not used");
  t.is((await eventsOf(ctx, projectB)).length, 0);
});

test('a real binding: code → posted from the team in a signed event → active; then routes work and messages arrive', async (t) => {
  const team = newTeam();
  const projectA = await newProject(ctx, orgA);
  const before = Date.now();
  const requested = await requestCode(orgA, team);
  t.is(requested.statusCode, 201, JSON.stringify(requested.body));
  t.deepEqual(Object.keys(requested.body).sort(), ['code', 'expires_at', 'org_id', 'status', 'team_id']);
  t.like(requested.body, { team_id: team, org_id: orgA, status: 'pending' });
  t.regex(requested.body.code, /^svcbind-[0-9a-f]{32}$/);
  const ttl = Date.parse(requested.body.expires_at) - before;
  t.true(ttl > 14 * 60_000 && ttl <= 15 * 60_000 + 5_000, `expires in 15 minutes (${ttl} ms)`);

  const stored = await ctx.srv.kernel.db('chat_team_binding_codes').where({ team_id: team });
  t.is(stored.length, 1);
  t.false(JSON.stringify(stored).includes(requested.body.code.slice(8)), 'the code is stored only hashed');

  t.like((await admin.get(`/orgs/${orgA}/chat-teams/${team}`)).body, { team_id: team, org_id: orgA, status: 'pending', bound_at: null });
  assertError(t, await admin.post(`/projects/${projectA}/routes`, { team_id: team }), 422, NOT_BOUND(team, orgA));

  const bound = await say(team, `<@U0SVCBOT> bind ${requested.body.code}`);
  t.is(bound.statusCode, 200, JSON.stringify(bound.body));
  t.deepEqual(bound.body, { bound: true, team_id: team, message: `chat team ${team} is now bound to the org that asked for this code` });
  t.like(await binding(team), { org_id: orgA, bound_via: 'code', bound_by: 'chatapp:U0TEAMADMIN' });
  const status = (await admin.get(`/orgs/${orgA}/chat-teams/${team}`)).body;
  t.like(status, { team_id: team, org_id: orgA, status: 'active', expires_at: null });
  t.truthy(status.bound_at);
  t.is((await eventsOf(ctx, projectA)).length, 0, 'the bind message itself is not stored as an event');

  const listed = (await admin.get(`/orgs/${orgA}/chat-teams?limit=100`)).body;
  t.like(
    listed.data.find((b: { team_id: string }) => b.team_id === team),
    { org_id: orgA, status: 'active' },
  );
  t.false(
    (await ownerB.api.get(`/orgs/${orgB}/chat-teams?limit=100`)).body.data.some((b: { team_id: string }) => b.team_id === team),
    "not in another org's list",
  );

  t.is((await admin.post(`/projects/${projectA}/routes`, { team_id: team })).statusCode, 201);
  const delivered = await say(team, 'ship it');
  t.is(delivered.statusCode, 201);
  t.is(delivered.body.project_id, projectA);
  assertError(t, await requestCode(orgA, team), 409, `chat team ${team} is already bound to this org`);
});

test('a code posted from a different team binds nothing (and stays usable by the right team)', async (t) => {
  const team = newTeam();
  const other = newTeam();
  const projectB = await newProject(ctx, orgB);
  const code = (await requestCode(orgB, team, ownerB.api)).body.code;
  const wrong = await say(other, `bind ${code}`);
  t.is(wrong.statusCode, 202);
  t.deepEqual(wrong.body, { ignored: true, message: NO_BIND });
  t.is(await binding(team), undefined);
  t.is(await binding(other), undefined);
  assertError(t, await ownerB.api.post(`/projects/${projectB}/routes`, { team_id: other }), 422, NOT_BOUND(other, orgB));
  assertError(t, await ownerB.api.post(`/projects/${projectB}/routes`, { team_id: team }), 422, NOT_BOUND(team, orgB));
  t.is((await say(team, `bind ${code}`)).statusCode, 200);
  t.like(await binding(team), { org_id: orgB });
});

test('an expired code and a used code bind nothing', async (t) => {
  const team = newTeam();
  const expired = (await requestCode(orgA, team)).body.code;
  await ctx.srv.kernel
    .db('chat_team_binding_codes')
    .where({ team_id: team })
    .update({ expires_at: new Date(Date.now() - 1000) });
  t.deepEqual((await say(team, `bind ${expired}`)).body, { ignored: true, message: NO_BIND });
  t.is(await binding(team), undefined);

  const code = (await requestCode(orgA, team)).body.code;
  t.is((await say(team, `bind ${code}`)).statusCode, 200);
  t.is((await admin.delete(`/orgs/${orgA}/chat-teams/${team}`)).statusCode, 204);
  t.is(await binding(team), undefined, 'unbound');
  t.deepEqual((await say(team, `bind ${code}`)).body, { ignored: true, message: NO_BIND }, 'a used code does not bind again');
  t.is(await binding(team), undefined);
  t.deepEqual((await say(team, 'bind svcbind-0123456789abcdef0123456789abcdef')).body, { ignored: true, message: NO_BIND }, 'a made-up code');
});

test('only the first org holds a team; after it unbinds (its routes go with it) another org may bind', async (t) => {
  const team = newTeam();
  const projectA = await newProject(ctx, orgA);
  const projectB = await newProject(ctx, orgB);
  // Both orgs ask; the team posts A's code first. B's code then cannot take the team over.
  const codeA = (await requestCode(orgA, team)).body.code;
  const codeB = (await requestCode(orgB, team, ownerB.api)).body.code;
  t.is((await say(team, `bind ${codeA}`)).statusCode, 200);
  t.deepEqual((await say(team, `bind ${codeB}`)).body, { ignored: true, message: `chat team ${team} is bound to another org; it must unbind it first` });
  t.like(await binding(team), { org_id: orgA });
  t.is((await admin.post(`/projects/${projectA}/routes`, { team_id: team })).statusCode, 201);

  assertError(t, await ownerB.api.delete(`/orgs/${orgB}/chat-teams/${team}`), 404, `chat team ${team} is not bound to this org`);
  t.is((await admin.delete(`/orgs/${orgA}/chat-teams/${team}`)).statusCode, 204);
  t.is((await ctx.srv.kernel.db('chat_routes').where({ team_id: team })).length, 0, "the org's routes of the team are removed with the binding");
  t.is((await say(team, 'anyone?')).statusCode, 202);

  const fresh = (await requestCode(orgB, team, ownerB.api)).body.code;
  t.is((await say(team, `bind ${fresh}`)).statusCode, 200);
  t.is((await ownerB.api.post(`/projects/${projectB}/routes`, { team_id: team })).statusCode, 201);
  t.is((await say(team, 'now B')).body.project_id, projectB);
});

test('deleting an org releases its teams; a code an org asked for before it was deleted binds nothing', async (t) => {
  const team = newTeam();
  const gone = (await admin.post('/orgs', { name: 'Gone soon' })).body.id;
  const code = (await requestCode(gone, team)).body.code;
  t.is((await say(team, `bind ${code}`)).statusCode, 200);
  assertError(t, await requestCode(orgB, team, ownerB.api), 409, `chat team ${team} is bound to another org; it must unbind it first`);
  const late = newTeam();
  const lateCode = (await requestCode(gone, late)).body.code;
  t.is((await admin.delete(`/orgs/${gone}`)).statusCode, 204);

  const fresh = await requestCode(orgB, team, ownerB.api);
  t.is(fresh.statusCode, 201, 'the deleted org no longer holds the team');
  t.is(await binding(team), undefined);
  t.is((await say(team, `bind ${fresh.body.code}`)).statusCode, 200);
  t.like(await binding(team), { org_id: orgB });
  t.deepEqual((await say(late, `bind ${lateCode}`)).body, { ignored: true, message: NO_BIND });
  t.is(await binding(late), undefined);
});

test('two orgs’ codes posted at once: exactly one binds', async (t) => {
  const team = newTeam();
  const codes = [(await requestCode(orgA, team)).body.code, (await requestCode(orgB, team, ownerB.api)).body.code];
  const replies = await Promise.all(codes.map((code) => say(team, `bind ${code}`)));
  t.deepEqual(replies.map((r) => r.statusCode).sort(), [200, 202]);
  t.is((await ctx.srv.kernel.db('chat_team_bindings').where({ team_id: team })).length, 1);
});

test('who may ask: routes:write on the org (admins); an unsigned or badly signed bind is 401 and binds nothing', async (t) => {
  const team = newTeam();
  const member = await memberOf(ctx, orgA, 'plain');
  assertError(t, await requestCode(orgA, team, member.api), 403, 'missing permission routes:write');
  assertError(t, await requestCode(orgA, team, ownerB.api), 404, `org ${orgA} not found`);
  assertError(t, await admin.post(`/orgs/${orgA}/chat-teams`, { team_id: 'T 1' }), 400, /"team_id" with value "T 1" fails to match/);
  t.is((await member.api.get(`/orgs/${orgA}/chat-teams/${team}`)).statusCode, 404, 'nothing pending or bound yet');
  assertError(t, await admin.get(`/orgs/${orgA}/chat-teams/${team}`), 404, `chat team ${team} is not bound to this org`);

  const code = (await requestCode(orgA, team)).body.code;
  const body = JSON.stringify({
    type: 'event_callback',
    team_id: team,
    event_id: 'Ev0FORGED',
    event: { type: 'message', channel: 'C0GENERAL', user: 'U0EVE', text: `bind ${code}`, ts: '1718000000.000001' },
  });
  assertError(t, await deliver(ctx.srv.server, GATEWAY, body, chatHeaders('not-the-signing-secret', body)), 401, /does not match/);
  assertError(t, await deliver(ctx.srv.server, GATEWAY, body, {}), 401, /headers are required/);
  t.is(await binding(team), undefined);
  t.is((await member.api.get(`/orgs/${orgA}/chat-teams/${team}`)).body.status, 'pending', 'members read the status');
});
