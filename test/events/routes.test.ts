import test from 'ava';
import { assertError, memberOf } from '../orgs/helpers.ts';
import type { World } from '../jobs/claim-helpers.ts';
import { ISO } from '../jobs/claim-helpers.ts';
import { eventWorld, postEvent } from './helpers.ts';

// The api role only: events stay pending (no router), which is what the routes promise.
let w: World;
test.before(async () => {
  w = await eventWorld('evroutes');
});
test.after.always(() => w?.ctx.srv.stop());

const countEvents = async (project = w.projectA) => Number((await w.db('events').where({ project_id: project }).count({ n: '*' }).first())!.n);

test.serial('POST events: 201 pending with the spec fields; defaults: source manual, actor the caller as user, payload {}', async (t) => {
  const res = await w.owner.api.post(`/projects/${w.projectA}/events`, {
    type: 'manual.deploy',
    env_name: 'staging',
    ref_branch: 'main',
    ref_sha: 'a'.repeat(40),
    mutation_id: 'mut-1',
    request_id: 'req-1',
    payload: { service: 'api', nested: { n: 1 } },
  });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.regex(res.body.id, /^evt_[0-9a-z]{26}$/);
  t.like(res.body, {
    project_id: w.projectA,
    type: 'manual.deploy',
    source: 'manual',
    status: 'pending',
    env_name: 'staging',
    ref_branch: 'main',
    ref_sha: 'a'.repeat(40),
    actor_type: 'user',
    actor_id: w.owner.id,
    dedupe_key: null,
    mutation_id: 'mut-1',
    request_id: 'req-1',
    routing: null,
    error: null,
  });
  t.deepEqual(res.body.payload_json, { service: 'api', nested: { n: 1 } });
  t.regex(res.body.created_at, ISO);
  const bare = await postEvent(w, { type: 'app.signup', source: 'app', actor_type: 'app', actor_id: 'my-app' });
  t.like(bare, { source: 'app', actor_type: 'app', actor_id: 'my-app', payload_json: {} });
});

test.serial('dedupe_key: the second POST answers 200 with the first event and writes nothing', async (t) => {
  const first = await postEvent(w, { type: 'manual.once', dedupe_key: 'once-1', payload: { n: 1 } });
  const before = await countEvents();
  const again = await w.owner.api.post(`/projects/${w.projectA}/events`, { type: 'manual.once', dedupe_key: 'once-1', payload: { n: 2 } });
  t.is(again.statusCode, 200);
  t.deepEqual(again.body, first);
  t.is(await countEvents(), before);
  const elsewhere = await w.owner.api.post(`/projects/${w.projectA2}/events`, { type: 'manual.once', dedupe_key: 'once-1' });
  t.is(elsewhere.statusCode, 201, 'keys are per project');
});

test.serial('source runner or system, and system.* / runner.* types: 403, nothing written', async (t) => {
  const before = await countEvents();
  assertError(
    t,
    await w.owner.api.post(`/projects/${w.projectA}/events`, { type: 'runner.started', source: 'runner' }),
    403,
    'events from source runner are emitted by the platform only',
  );
  assertError(
    t,
    await w.owner.api.post(`/projects/${w.projectA}/events`, { type: 'manual.x', source: 'system' }),
    403,
    'events from source system are emitted by the platform only',
  );
  assertError(
    t,
    await w.owner.api.post(`/projects/${w.projectA}/events`, { type: 'system.job.failed' }),
    403,
    'event type system.job.failed: system.* events are emitted by the platform only',
  );
  t.is(await countEvents(), before);
});

test.serial('bad input: 400 naming the field, nothing written; never a 500', async (t) => {
  const before = await countEvents();
  const cases: [unknown, RegExp][] = [
    [{}, /"type" is required/],
    [{ type: '' }, /"type" is not allowed to be empty/],
    [{ type: 'has space' }, /"type" .*dot-separated event type/],
    [{ type: 'a.b', source: 'mars' }, /"source" must be one of/],
    [{ type: 'a.b', payload: [1, 2] }, /"payload" must be of type object/],
    [{ type: 'a.b', payload: 'x' }, /"payload" must be of type object/],
    [{ type: 'a.b', ref_sha: 'zz' }, /"ref_sha" .*hex commit SHA/],
    [{ type: 'a.b', actor_type: 'robot' }, /"actor_type" must be one of/],
    [{ type: 'a.b', dedupe_key: 'x'.repeat(501) }, /"dedupe_key" length must be less than or equal to 500/],
    [{ type: 'a.b', colour: 'red' }, /"colour" is not allowed/],
    [{ type: 'x'.repeat(201) }, /"type" length must be less than or equal to 200/],
  ];
  for (const [body, message] of cases) assertError(t, await w.owner.api.post(`/projects/${w.projectA}/events`, body), 400, message);
  const raw = await w.ctx.srv.server.inject({
    method: 'POST',
    url: `/projects/${w.projectA}/events`,
    payload: '{"type":',
    headers: { authorization: `Bearer ${w.owner.token}`, 'content-type': 'application/json' },
  });
  t.is(raw.statusCode, 400);
  assertError(t, await w.owner.api.post('/projects/nope/events', { type: 'a.b' }), 400, /"project_id"/);
  t.is(await countEvents(), before);
});

test.serial('404: a project the caller cannot see, an unknown event, an event of another project; 400 for a malformed id', async (t) => {
  const event = await postEvent(w, { type: 'manual.seen' });
  assertError(t, await w.outsider.api.post(`/projects/${w.projectA}/events`, { type: 'manual.x' }), 404, `project ${w.projectA} not found`);
  assertError(t, await w.outsider.api.get(`/projects/${w.projectA}/events/${event.id}`), 404, `project ${w.projectA} not found`);
  assertError(t, await w.outsider.api.get(`/projects/${w.projectA}/events`), 404, `project ${w.projectA} not found`);
  assertError(t, await w.owner.api.get(`/projects/${w.projectA2}/events/${event.id}`), 404, `event ${event.id} not found`);
  assertError(t, await w.owner.api.get(`/projects/${w.projectA}/events/evt_01h455vb4pex5vsknk084sn02q`), 404, 'event evt_01h455vb4pex5vsknk084sn02q not found');
  assertError(t, await w.owner.api.get(`/projects/${w.projectA}/events/nope`), 400, /"event_id"/);
  const orgOfA = (await w.db('projects').where({ id: w.projectA }).first('org_id')).org_id;
  assertError(t, await w.outsider.api.get(`/orgs/${orgOfA}/events`), 404, `org ${orgOfA} not found`);
});

test.serial('GET events: newest first, filters type, source, status, paginated; GET one', async (t) => {
  const a = await postEvent(w, { type: 'manual.list-a' }, w.projectA2);
  const b = await postEvent(w, { type: 'app.list-b', source: 'app' }, w.projectA2);
  const c = await postEvent(w, { type: 'manual.list-a' }, w.projectA2);
  await w.db('events').where({ id: a.id }).update({ status: 'completed' });
  const list = (q: string) => w.owner.api.get(`/projects/${w.projectA2}/events${q}`);
  const all = await list('?limit=100');
  t.is(all.statusCode, 200);
  const ids = all.body.data.map((e: any) => e.id);
  t.deepEqual(ids.slice(0, 3), [c.id, b.id, a.id]);
  t.deepEqual(
    (await list('?type=manual.list-a')).body.data.map((e: any) => e.id),
    [c.id, a.id],
  );
  t.deepEqual(
    (await list('?source=app')).body.data.map((e: any) => e.id),
    [b.id],
  );
  t.deepEqual(
    (await list('?status=completed')).body.data.map((e: any) => e.id),
    [a.id],
  );
  const page = await list('?type=manual.list-a&limit=1&offset=1');
  t.deepEqual(page.body.pagination, { limit: 1, offset: 1, count: 1, total: 2, has_more: false });
  assertError(t, await list('?status=done'), 400, /"status" must be one of/);
  assertError(t, await list('?limit=0'), 400, /"limit"/);
  const one = await w.owner.api.get(`/projects/${w.projectA2}/events/${b.id}`);
  t.deepEqual(one.body, b);
});

test.serial('GET /orgs/{org_id}/events: every project of the org; members read, and write events with events:write', async (t) => {
  const orgId = (await w.db('projects').where({ id: w.projectA }).first('org_id')).org_id;
  const inA = await postEvent(w, { type: 'manual.org-a' });
  const inA2 = await postEvent(w, { type: 'manual.org-a' }, w.projectA2);
  const res = await w.owner.api.get(`/orgs/${orgId}/events?type=manual.org-a`);
  t.is(res.statusCode, 200);
  t.deepEqual(
    res.body.data.map((e: any) => e.id),
    [inA2.id, inA.id],
  );
  const member = await memberOf(w.ctx, orgId, 'ev-member');
  t.is((await member.api.get(`/orgs/${orgId}/events?limit=1`)).statusCode, 200);
  const created = await member.api.post(`/projects/${w.projectA}/events`, { type: 'manual.by-member' });
  t.is(created.statusCode, 201);
  t.is(created.body.actor_id, member.id);
});
