import test from 'ava';
import { assertError } from '../orgs/helpers.ts';
import { as, bindTeam, call, chatHeaders, deliver, eventsOf, newProject, setSecret, setup, type Ctx } from './helpers.ts';

let ctx: Ctx;
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const GATEWAY = '/gateway/providers/chatapp/webhook';
const LEGACY = '/integrations/chatapp/events';

test.before(async () => {
  ctx = await setup();
  await setSecret(ctx, '/system', 'CHATAPP_SIGNING_SECRET', SIGNING_SECRET);
});
test.after.always(() => ctx?.srv.stop());

let teams = 0;
const newTeam = () => `T${process.pid}X${++teams}`;
let events = 0;

/** An event_callback envelope as the chat app sends it. */
function envelope(team: string, event: Record<string, unknown>, eventId = `Ev${process.pid}E${++events}`) {
  return {
    token: 'legacy-verification-token',
    team_id: team,
    api_app_id: 'A0APPID1',
    event: { event_ts: '1718000000.000200', channel_type: 'channel', ...event },
    type: 'event_callback',
    event_id: eventId,
    event_time: 1718000000,
    authorizations: [{ enterprise_id: null, team_id: team, user_id: 'U0BOTUSER', is_bot: true }],
    is_ext_shared_channel: false,
  };
}

const message = (channel: string, text = 'deploy the widgets please', extra: Record<string, unknown> = {}) => ({
  type: 'message',
  channel,
  user: 'U0ALICE1',
  text,
  ts: '1718000000.000100',
  client_msg_id: '5f3c2e2a-1b2c-4d5e-8f90-123456789abc',
  ...extra,
});

/** Signed with the signing secret (or `opts.secret`), sent now (or at `opts.at`). */
function send(body: object | string, opts: { path?: string; secret?: string; at?: number; headers?: Record<string, string> } = {}) {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  return deliver(ctx.srv.server, opts.path ?? GATEWAY, raw, { ...chatHeaders(opts.secret ?? SIGNING_SECRET, raw, opts.at), ...opts.headers });
}

const bound = new Set<string>();
/** Routes the team (bound first to the projects' org through the code flow, as a route needs). */
async function route(projectId: string, team: string, channel?: string) {
  if (!bound.has(team)) await bindTeam(ctx.srv.server, as(ctx.srv.server, ctx.adminToken), ctx.orgId, team, SIGNING_SECRET);
  bound.add(team);
  const res = await as(ctx.srv.server, ctx.adminToken).post(`/projects/${projectId}/routes`, { team_id: team, ...(channel ? { channel } : {}) });
  if (res.statusCode !== 201) throw new Error(`route: ${JSON.stringify(res.body)}`);
}

test.serial('without the system signing secret the endpoint says it is not configured (404, not a server failure)', async (t) => {
  await call(ctx.srv.server, 'DELETE', '/system/secrets/CHATAPP_SIGNING_SECRET', undefined, ctx.adminToken);
  try {
    assertError(
      t,
      await send({ type: 'url_verification', challenge: 'abc' }),
      404,
      'the chat app integration is not configured on this server: an admin sets the system secret CHATAPP_SIGNING_SECRET to enable it',
    );
  } finally {
    await setSecret(ctx, '/system', 'CHATAPP_SIGNING_SECRET', SIGNING_SECRET);
  }
});

test('the URL-verification handshake answers the challenge, on both paths', async (t) => {
  const handshake = { token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P', type: 'url_verification' };
  for (const path of [GATEWAY, LEGACY]) {
    const res = await send(handshake, { path });
    t.is(res.statusCode, 200);
    t.deepEqual(res.body, { challenge: handshake.challenge });
  }
  assertError(t, await send(handshake, { secret: 'another-apps-secret' }), 401, 'X-Slack-Signature does not match the request signed with the signing secret');
});

test('a message in a routed team becomes a pending chatapp.message event of the project', async (t) => {
  const projectId = await newProject(ctx);
  const team = newTeam();
  await route(projectId, team);
  const body = envelope(team, message('C0GENERAL', 'deploy the widgets please', { thread_ts: '1717999999.000050' }), 'Ev0MSG1');
  const res = await send(body);
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.like(res.body, {
    project_id: projectId,
    type: 'chatapp.message',
    source: 'chatapp',
    status: 'pending',
    actor_type: 'user',
    actor_id: 'chatapp:U0ALICE1',
    dedupe_key: 'chatapp:Ev0MSG1',
    ref_sha: null,
    ref_branch: null,
  });
  t.deepEqual(res.body.payload_json, {
    text: 'deploy the widgets please',
    channel: 'C0GENERAL',
    user: 'U0ALICE1',
    ts: '1718000000.000100',
    thread_ts: '1717999999.000050',
    team_id: team,
  });

  const again = await send(body, { headers: { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' } });
  t.is(again.statusCode, 200, 'a retry of the same event id stores nothing new');
  t.is(again.body.id, res.body.id);
  t.is((await eventsOf(ctx, projectId)).length, 1);
});

test('an app mention becomes chatapp.app_mention; the legacy path stores the same way', async (t) => {
  const projectId = await newProject(ctx);
  const team = newTeam();
  await route(projectId, team);
  const mention = { type: 'app_mention', channel: 'C0GENERAL', user: 'U0BOB001', text: '<@U0BOTUSER> run the release pipeline', ts: '1718000001.000300' };
  const res = await send(envelope(team, mention), { path: LEGACY });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.like(res.body, { type: 'chatapp.app_mention', actor_id: 'chatapp:U0BOB001' });
  t.deepEqual(res.body.payload_json, {
    text: '<@U0BOTUSER> run the release pipeline',
    channel: 'C0GENERAL',
    user: 'U0BOB001',
    ts: '1718000001.000300',
    thread_ts: null,
    team_id: team,
  });
});

test("a channel's own route wins over the team's; other channels go to the team's project", async (t) => {
  const teamProject = await newProject(ctx);
  const channelProject = await newProject(ctx);
  const team = newTeam();
  await route(teamProject, team);
  await route(channelProject, team, 'C0RELEASES');
  t.is((await send(envelope(team, message('C0RELEASES')))).body.project_id, channelProject);
  t.is((await send(envelope(team, message('C0RANDOM')))).body.project_id, teamProject);
});

test('a team without a route (or routed only for other channels) is acknowledged with 202 and nothing is stored', async (t) => {
  const unknown = await send(envelope('T0NOBODY', message('C0GENERAL')));
  t.is(unknown.statusCode, 202);
  t.deepEqual(unknown.body, { ignored: true, message: 'no chat route for team T0NOBODY channel C0GENERAL: add one with POST /projects/{project_id}/routes' });

  const projectId = await newProject(ctx);
  const team = newTeam();
  await route(projectId, team, 'C0ONLYTHIS');
  t.is((await send(envelope(team, message('C0OTHER')))).statusCode, 202);
  t.is((await eventsOf(ctx, projectId)).length, 0);
  const stray = await ctx.srv.kernel.db('events').whereRaw("payload_json->>'team_id' in (?, ?)", ['T0NOBODY', team]).count({ n: '*' }).first();
  t.is(Number(stray!.n), 0);
});

test("a deleted project's route no longer receives messages", async (t) => {
  const projectId = await newProject(ctx);
  const team = newTeam();
  await route(projectId, team);
  t.is((await call(ctx.srv.server, 'DELETE', `/projects/${projectId}`, undefined, ctx.adminToken)).statusCode, 204);
  t.is((await send(envelope(team, message('C0GENERAL')))).statusCode, 202);
  t.is((await eventsOf(ctx, projectId)).length, 0);
});

test('bot posts, edits and other event types are acknowledged and not stored', async (t) => {
  const projectId = await newProject(ctx);
  const team = newTeam();
  await route(projectId, team);
  const cases: [Record<string, unknown>, string][] = [
    [
      message('C0GENERAL', 'Build passed', { subtype: 'bot_message', bot_id: 'B0SVC001' }),
      'bot messages, edits, deletions and other message subtypes are not stored',
    ],
    [message('C0GENERAL', 'Build passed', { bot_id: 'B0SVC001' }), 'bot messages, edits, deletions and other message subtypes are not stored'],
    [
      { type: 'message', subtype: 'message_changed', channel: 'C0GENERAL', ts: '1718000000.000900', message: { text: 'edited' } },
      'bot messages, edits, deletions and other message subtypes are not stored',
    ],
    [
      { type: 'reaction_added', user: 'U0ALICE1', reaction: 'thumbsup', item: { type: 'message', channel: 'C0GENERAL', ts: '1718000000.000100' } },
      'events of type reaction_added are not stored',
    ],
  ];
  for (const [event, reason] of cases) {
    const res = await send(envelope(team, event));
    t.is(res.statusCode, 202);
    t.deepEqual(res.body, { ignored: true, message: reason });
  }
  t.deepEqual((await send({ type: 'app_rate_limited', team_id: team, minute_rate_limited: 1518467820, api_app_id: 'A0APPID1' })).body, {
    ignored: true,
    message: 'requests of type app_rate_limited are not stored',
  });
  const broadcast = await send(envelope(team, message('C0GENERAL', 'also here', { subtype: 'thread_broadcast', thread_ts: '1717999999.000050' })));
  t.is(broadcast.statusCode, 201, 'a reply also sent to the channel is someone writing');
  t.is((await eventsOf(ctx, projectId)).length, 1);
});

test('stale, future, missing and wrong signatures are 401; nothing is stored', async (t) => {
  const projectId = await newProject(ctx);
  const team = newTeam();
  await route(projectId, team);
  const now = Math.floor(Date.now() / 1000);
  const body = envelope(team, message('C0GENERAL'));
  const replay = 'X-Slack-Request-Timestamp is more than 5 minutes from the server time (refused as a replay)';
  assertError(t, await send(body, { at: now - 330 }), 401, replay);
  assertError(t, await send(body, { at: now - 3600 }), 401, replay);
  assertError(t, await send(body, { at: now + 330 }), 401, replay);
  assertError(t, await send(body, { secret: 'wrong-secret' }), 401, 'X-Slack-Signature does not match the request signed with the signing secret');
  assertError(t, await deliver(ctx.srv.server, GATEWAY, JSON.stringify(body), {}), 401, 'X-Slack-Signature and X-Slack-Request-Timestamp headers are required');
  assertError(t, await send(body, { headers: { 'x-slack-request-timestamp': 'yesterday' } }), 401, 'X-Slack-Request-Timestamp must be Unix seconds');
  assertError(t, await send(body, { headers: { 'x-slack-signature': 'v1=abc' } }), 401, 'X-Slack-Signature must be v0=<64 hex digits>');
  // A signature for another timestamp does not carry over.
  const raw = JSON.stringify(body);
  const moved = { ...chatHeaders(SIGNING_SECRET, raw, now - 10), 'x-slack-request-timestamp': String(now) };
  assertError(t, await deliver(ctx.srv.server, GATEWAY, raw, moved), 401, /does not match/);
  t.is((await send(body, { at: now - 240 })).statusCode, 201, 'inside the window it is accepted');
  t.is((await eventsOf(ctx, projectId)).length, 1);
});

test('unreadable requests are 400, never 500', async (t) => {
  const team = newTeam();
  await route(await newProject(ctx), team);
  assertError(t, await send('{"type": "event_callback",'), 400, 'the request body is not valid JSON');
  assertError(t, await send('"text"'), 400, 'the request body must be a JSON object');
  assertError(t, await send(''), 400, 'the request body is not valid JSON');
  assertError(t, await send({ type: 'url_verification' }), 400, 'url_verification: "challenge" is required');
  assertError(
    t,
    await send(envelope(team, { type: 'message', user: 'U0ALICE1', text: 'hi', ts: '1718000000.1' })),
    400,
    'event_callback: "event.channel" is required',
  );
  assertError(t, await send(envelope(team, message('C0GENERAL', 'hi', { ts: 'now' }))), 400, /^event_callback: "event.ts" with value "now" fails to match/);
  assertError(
    t,
    await send({ ...envelope(team, message('C0GENERAL')), team_id: 'not a team' }),
    400,
    /^event_callback: "team_id" with value "not a team" fails to match/,
  );
});
