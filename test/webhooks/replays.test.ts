import test from 'ava';
import { SECRET, deliveriesOf, emit, receiver, sleep, subscribe, svcSignatureValid, until, webhookWorld, type Receiver, type WebhookWorld } from './helpers.ts';

let w: WebhookWorld;
let rx: Receiver;
test.before(async () => {
  // No retries: a failed attempt fails the delivery for good at once.
  w = await webhookWorld('whrpl', { overrides: { webhooks: { retry_delays_ms: [] } } });
  rx = await receiver();
});
test.after.always(async () => {
  await rx?.close();
  await w?.srv.stop();
});

const RPL_ID = /^rpl_[0-7][0-9a-hjkmnp-tv-z]{25}$/;
const replay = (subId: string, body: Record<string, unknown>) => w.owner.api.post(`/orgs/${w.orgA}/webhooks/${subId}/replays`, body);
const getReplay = async (subId: string, id: string) => (await w.owner.api.get(`/orgs/${w.orgA}/webhooks/${subId}/replays/${id}`)).body;
const at = (path: string) => rx.received.filter((r) => r.path === `/hook/${path}`);

/** Events emitted and fanned out before the subscription exists: nothing delivers them until a replay. */
async function history(type: string, n: number): Promise<string[]> {
  const ids = [];
  for (let i = 0; i < n; i++) {
    ids.push((await emit(w, { type, payload: { i } })).id);
    await emit(w, { type: 'manual.other', payload: { i } }); // in the window, not matching
  }
  // Fanned out before the subscription exists (an outbox row taken later would reach it).
  await until(async () => Number((await w.db('webhook_outbox').count({ n: '*' }).first())!.n) === 0, 'the outbox to drain');
  return ids;
}

test.serial('a dry run counts the window and enqueues nothing; a real run sends each event once; a second one skips them all', async (t) => {
  const ids = await history('manual.old', 5);
  const sub = await subscribe(w, { url: `${rx.url}/old`, events: ['manual.old'] });

  const dry = await replay(sub.id, { from_event: ids[0], dry_run: true });
  t.is(dry.statusCode, 201, JSON.stringify(dry.body));
  t.regex(dry.body.id, RPL_ID);
  t.like(dry.body, {
    subscription_id: sub.id,
    dry_run: true,
    status: 'completed',
    from_event: ids[0],
    max_events: 5000,
    events_matched: 5,
    events_enqueued: 0,
    events_skipped: 0,
  });
  t.deepEqual(dry.body.progress, { pending: 0, succeeded: 0, failed: 0 });
  t.truthy(dry.body.to);
  await sleep(300);
  t.is(at('old').length, 0, 'a dry run sends nothing');
  t.is((await deliveriesOf(w, sub.id)).length, 0);

  const real = await replay(sub.id, { from_event: ids[1] });
  t.is(real.statusCode, 201);
  t.like(real.body, { dry_run: false, events_matched: 4, events_enqueued: 4, events_skipped: 0 });
  const done = await until(async () => {
    const r = await getReplay(sub.id, real.body.id);
    return r.status === 'completed' ? r : null;
  }, 'the replay to complete');
  t.deepEqual(done.progress, { pending: 0, succeeded: 4, failed: 0 });
  t.truthy(done.completed_at);
  t.deepEqual(
    at('old')
      .map((r) => JSON.parse(r.body).id)
      .sort(),
    ids.slice(1).sort(),
  );
  t.true(at('old').every((r) => svcSignatureValid(r, SECRET)));
  const deliveries = await deliveriesOf(w, sub.id);
  t.true(deliveries.every((d) => d.kind === 'replay' && d.replay_id === real.body.id && d.status === 'succeeded'));

  const again = await replay(sub.id, { from_event: ids[0] });
  t.like(again.body, { status: 'running', events_matched: 5, events_enqueued: 1, events_skipped: 4 }, 'only the event not yet delivered');
  await until(async () => at('old').length === 5, 'the fifth event');
  const third = await replay(sub.id, { from_event: ids[0], max_events: 10_000 });
  t.like(third.body, { status: 'completed', events_matched: 5, events_enqueued: 0, events_skipped: 5 });
  await sleep(300);
  t.is(at('old').length, 5, 'never twice to the same subscription');
});

test.serial('max_events takes the first events of the window; to closes it', async (t) => {
  const ids = await history('manual.window', 4);
  const sub = await subscribe(w, { url: `${rx.url}/window`, events: ['manual.window'] });
  const two = await replay(sub.id, { from_event: ids[0], max_events: 2, dry_run: true });
  t.like(two.body, { events_matched: 2 });
  const toTime = (await w.db('events').where({ id: ids[1] }).first('created_at')).created_at;
  const bounded = await replay(sub.id, { from_event: ids[0], to: new Date(toTime.getTime() + 1).toISOString(), dry_run: true });
  t.like(bounded.body, { events_matched: 2 });
  const real = await replay(sub.id, { from_event: ids[2], max_events: 1 });
  t.like(real.body, { events_matched: 1, events_enqueued: 1 });
  await until(async () => at('window').length === 1, 'one event');
  t.is(JSON.parse(at('window')[0].body).id, ids[2]);
});

test.serial('deliveries that failed for good are replayed', async (t) => {
  rx.reply = (r) => (r.path === '/hook/failed' ? { status: 500 } : { status: 200, body: 'ok' });
  const sub = await subscribe(w, { url: `${rx.url}/failed`, events: ['manual.failed'] });
  const event = await emit(w, { type: 'manual.failed' });
  await until(async () => (await deliveriesOf(w, sub.id)).find((d) => d.status === 'failed'), 'the live delivery to fail');
  rx.reply = () => ({ status: 200, body: 'ok' });
  const res = await replay(sub.id, { from_event: event.id });
  t.like(res.body, { events_matched: 1, events_enqueued: 1, events_skipped: 0 });
  await until(async () => (await getReplay(sub.id, res.body.id)).status === 'completed', 'the replay');
  t.deepEqual((await getReplay(sub.id, res.body.id)).progress, { pending: 0, succeeded: 1, failed: 0 });
});

test.serial('at most 3 replays of a subscription run at once: the fourth is 409 resource_conflict', async (t) => {
  rx.reply = (r) => (r.path === '/hook/slow' ? { status: 200, delayMs: 1_200 } : { status: 200, body: 'ok' });
  const ids = await history('manual.slow', 5);
  const sub = await subscribe(w, { url: `${rx.url}/slow`, events: ['manual.slow'] });
  const running: string[] = [];
  for (const id of ids.slice(0, 3)) {
    const res = await replay(sub.id, { from_event: id, max_events: 1 });
    t.like(res.body, { status: 'running', events_enqueued: 1 });
    running.push(res.body.id);
  }
  const fourth = await replay(sub.id, { from_event: ids[3], max_events: 1 });
  t.is(fourth.statusCode, 409);
  t.deepEqual(fourth.body, {
    statusCode: 409,
    error: 'Conflict',
    message: `3 replays of webhook ${sub.id} are still running; wait for one to finish`,
    code: 'resource_conflict',
  });
  const dry = await replay(sub.id, { from_event: ids[3], max_events: 1, dry_run: true });
  t.is(dry.statusCode, 201, 'a dry run enqueues nothing, so it is not limited');
  t.is((await getReplay(sub.id, running[0])).status, 'running');
  await until(async () => (await Promise.all(running.map((id) => getReplay(sub.id, id)))).every((r) => r.status === 'completed'), 'the three replays', 10_000);
  const later = await replay(sub.id, { from_event: ids[3], max_events: 1 });
  t.is(later.statusCode, 201);
  rx.reply = () => ({ status: 200, body: 'ok' });
});

test.serial('a bad window is webhook_replay_window_invalid (400 for the fields, 422 for the window); a disabled subscription 409', async (t) => {
  const [first] = await history('manual.bad', 1);
  const sub = await subscribe(w, { url: `${rx.url}/bad`, events: ['manual.bad'] });
  const scoped = await subscribe(w, { url: `${rx.url}/bad2`, events: ['*'] }, w.projectA2);
  const other = await w
    .db('events')
    .insert({ id: `evt_${'7'.repeat(26)}`, project_id: w.projectB, type: 'manual.bad', source: 'manual' })
    .returning('id');
  const before = await w.db('webhook_replays').count({ n: '*' }).first();
  const created = (await w.db('events').where({ id: first }).first('created_at')).created_at as Date;
  const cases: [string, Record<string, unknown>, number, RegExp, string | undefined][] = [
    [sub.id, {}, 400, /"from_event" is required/, 'webhook_replay_window_invalid'],
    [sub.id, { from_event: 'evt_x' }, 400, /"from_event" .*evt_<base32> id/, 'webhook_replay_window_invalid'],
    [sub.id, { from_event: first, max_events: 0 }, 400, /"max_events" must be greater than or equal to 1/, 'webhook_replay_window_invalid'],
    [sub.id, { from_event: first, max_events: 10_001 }, 400, /"max_events" must be less than or equal to 10000/, 'webhook_replay_window_invalid'],
    [sub.id, { from_event: first, max_events: 1.5 }, 400, /"max_events" must be an integer/, 'webhook_replay_window_invalid'],
    [sub.id, { from_event: first, to: 'yesterday' }, 400, /"to" must be in ISO 8601 date format/, 'webhook_replay_window_invalid'],
    [sub.id, { from_event: first, dry_run: 'maybe' }, 400, /"dry_run" must be a boolean/, undefined],
    [sub.id, { from_event: first, extra: 1 }, 400, /"extra" is not allowed/, undefined],
    [sub.id, { from_event: `evt_${'0'.repeat(26)}` }, 422, /from_event evt_0{26} is not an event of this webhook's org/, 'webhook_replay_window_invalid'],
    [sub.id, { from_event: other[0].id }, 422, /is not an event of this webhook's org/, 'webhook_replay_window_invalid'],
    [scoped.id, { from_event: first }, 422, /is not an event of this webhook's project/, 'webhook_replay_window_invalid'],
    [
      sub.id,
      { from_event: first, to: new Date(created.getTime() - 60_000).toISOString() },
      422,
      /^to \(.*\) is before from_event/,
      'webhook_replay_window_invalid',
    ],
  ];
  for (const [id, body, status, message, code] of cases) {
    const res = await replay(id, body);
    t.is(res.statusCode, status, JSON.stringify(body));
    t.regex(res.body.message, message);
    t.is(res.body.code, code, JSON.stringify(body));
  }
  await w.db('webhook_subscriptions').where({ id: sub.id }).update({ enabled: false });
  const disabled = await replay(sub.id, { from_event: first });
  t.is(disabled.statusCode, 409);
  t.deepEqual(disabled.body, {
    statusCode: 409,
    error: 'Conflict',
    message: `webhook ${sub.id} is disabled; enable it before replaying`,
    code: 'resource_conflict',
  });
  t.deepEqual(await w.db('webhook_replays').count({ n: '*' }).first(), before, 'nothing written');

  const unknown = await w.owner.api.get(`/orgs/${w.orgA}/webhooks/${scoped.id}/replays/rpl_${'0'.repeat(26)}`);
  t.is(unknown.statusCode, 404);
  t.is(unknown.body.code, 'resource_not_found');
});

test.serial('a replay is read only through its own subscription', async (t) => {
  const [first] = await history('manual.own', 1);
  const a = await subscribe(w, { url: `${rx.url}/own-a`, events: ['manual.own'] });
  const b = await subscribe(w, { url: `${rx.url}/own-b`, events: ['manual.own'] });
  const res = await replay(a.id, { from_event: first, dry_run: true });
  t.is((await w.owner.api.get(`/orgs/${w.orgA}/webhooks/${a.id}/replays/${res.body.id}`)).statusCode, 200);
  const other = await w.owner.api.get(`/orgs/${w.orgA}/webhooks/${b.id}/replays/${res.body.id}`);
  t.is(other.statusCode, 404);
  t.is(other.body.message, `replay ${res.body.id} not found`);
  t.is((await w.outsider.api.get(`/orgs/${w.orgA}/webhooks/${a.id}/replays/${res.body.id}`)).statusCode, 404);
});
