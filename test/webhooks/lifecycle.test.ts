import test from 'ava';
import {
  SECRET,
  deliveriesOf,
  emit,
  receiver,
  sleep,
  standardSignatureValid,
  subscribe,
  svcSignatureValid,
  until,
  webhookWorld,
  type Receiver,
  type WebhookWorld,
} from './helpers.ts';

let w: WebhookWorld;
let rx: Receiver;
test.before(async () => {
  // Retries far in the future: only first attempts happen during these tests.
  w = await webhookWorld('whlife', { overrides: { webhooks: { retry_delays_ms: [60_000] } } });
  rx = await receiver();
});
test.after.always(async () => {
  await rx?.close();
  await w?.srv.stop();
});

const get = async (id: string) => (await w.owner.api.get(`/orgs/${w.orgA}/webhooks/${id}`)).body;
const failing = (path: string) => (r: { path: string }) => (r.path === path ? { status: 500, body: 'down' } : { status: 200, body: 'ok' });

test.serial('10 consecutive failed deliveries disable the subscription; enable turns it back on and resets the count', async (t) => {
  rx.reply = failing('/hook/auto');
  const sub = await subscribe(w, { url: `${rx.url}/auto`, events: ['manual.auto'] });
  for (let i = 0; i < 9; i++) await emit(w, { type: 'manual.auto', payload: { i } });
  await until(async () => (await get(sub.id)).consecutive_failures === 9, '9 failures counted');
  t.like(await get(sub.id), { enabled: true, disabled_at: null });

  await emit(w, { type: 'manual.auto', payload: { i: 9 } });
  const disabled = await until(async () => {
    const s = await get(sub.id);
    return s.enabled ? null : s;
  }, 'the subscription to be disabled');
  t.like(disabled, { enabled: false, consecutive_failures: 10, disabled_reason: '10 consecutive failed deliveries' });
  t.truthy(disabled.disabled_at);

  await emit(w, { type: 'manual.auto', payload: { i: 10 } });
  await sleep(400);
  t.is((await deliveriesOf(w, sub.id, 'limit=100&kind=event')).length, 10, 'a disabled subscription gets no new deliveries');

  rx.reply = () => ({ status: 200, body: 'ok' });
  const enabled = await w.owner.api.patch(`/orgs/${w.orgA}/webhooks/${sub.id}/enable`, {});
  t.is(enabled.statusCode, 200);
  t.like(enabled.body, { enabled: true, consecutive_failures: 0, disabled_at: null, disabled_reason: null });
  const after = await emit(w, { type: 'manual.auto', payload: { i: 11 } });
  await until(async () => (await deliveriesOf(w, sub.id)).find((d) => d.event_id === after.id && d.status === 'succeeded'), 'delivery after enable');
  t.is((await get(sub.id)).consecutive_failures, 0);
});

test.serial('a success resets the failure count', async (t) => {
  let fail = true;
  rx.reply = (r) => (r.path === '/hook/reset' && fail ? { status: 502 } : { status: 204 });
  const sub = await subscribe(w, { url: `${rx.url}/reset`, events: ['manual.reset'] });
  for (let i = 0; i < 4; i++) await emit(w, { type: 'manual.reset' });
  await until(async () => (await get(sub.id)).consecutive_failures === 4, '4 failures');
  fail = false;
  await emit(w, { type: 'manual.reset' });
  await until(async () => (await get(sub.id)).consecutive_failures === 0, 'the count reset by a 204');
  t.pass();
  rx.reply = () => ({ status: 200, body: 'ok' });
});

test.serial('test sends webhook.test now and answers the outcome; it is listed, never retried, never counted', async (t) => {
  const sub = await subscribe(w, { url: `${rx.url}/probe`, events: ['manual.none'] });
  const ok = await w.owner.api.post(`/orgs/${w.orgA}/webhooks/${sub.id}/test`);
  t.is(ok.statusCode, 200, JSON.stringify(ok.body));
  t.like(ok.body, {
    subscription_id: sub.id,
    kind: 'test',
    event_type: 'webhook.test',
    status: 'succeeded',
    attempts: 1,
    response_status: 200,
    response_body: 'ok',
    next_attempt_at: null,
  });
  const got = rx.received.find((r) => r.headers['x-svc-delivery'] === ok.body.id)!;
  t.truthy(got, 'the receiver got it before the answer');
  const body = JSON.parse(got.body);
  t.like(body, { specversion: '1.0', type: 'webhook.test', id: ok.body.event_id, source: `svc://orgs/${w.orgA}` });
  t.deepEqual(body.data, { subscription_id: sub.id, message: 'test delivery from svc' });
  t.true(svcSignatureValid(got, SECRET));
  t.true(standardSignatureValid(got, SECRET));

  rx.reply = failing('/hook/probe');
  const bad = await w.owner.api.post(`/orgs/${w.orgA}/webhooks/${sub.id}/test`);
  t.is(bad.statusCode, 200);
  t.like(bad.body, { status: 'failed', attempts: 1, response_status: 500, response_body: 'down' });
  t.like(await get(sub.id), { enabled: true, consecutive_failures: 0 });
  const listed = await deliveriesOf(w, sub.id, 'kind=test');
  t.deepEqual(
    listed.map((d) => d.id),
    [bad.body.id, ok.body.id],
    'newest first',
  );
  rx.reply = () => ({ status: 200, body: 'ok' });

  const scoped = await subscribe(w, { url: `${rx.url}/probe-scoped` }, w.projectA);
  const fromProject = await w.owner.api.post(`/orgs/${w.orgA}/webhooks/${scoped.id}/test`);
  const sent = rx.received.find((r) => r.headers['x-svc-delivery'] === fromProject.body.id)!;
  t.is(JSON.parse(sent.body).source, `svc://orgs/${w.orgA}/projects/${w.projectA}`);
});

test.serial('a disabled subscription can still be tested; a deleted one is gone', async (t) => {
  const sub = await subscribe(w, { url: `${rx.url}/probe-off`, enabled: false });
  const res = await w.owner.api.post(`/orgs/${w.orgA}/webhooks/${sub.id}/test`);
  t.is(res.body.status, 'succeeded');
  t.is((await w.owner.api.delete(`/orgs/${w.orgA}/webhooks/${sub.id}`)).statusCode, 204);
  const gone = await w.owner.api.post(`/orgs/${w.orgA}/webhooks/${sub.id}/test`);
  t.is(gone.statusCode, 404);
  t.is(gone.body.code, 'resource_not_found');
});

test.serial('deliveries page newest first and filter by status', async (t) => {
  const sub = await subscribe(w, { url: `${rx.url}/paged`, events: ['manual.paged'] });
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await emit(w, { type: 'manual.paged', payload: { i } })).id);
  await until(async () => (await deliveriesOf(w, sub.id, 'status=succeeded')).length === 3, 'three deliveries');
  const page = await w.owner.api.get(`/orgs/${w.orgA}/webhooks/${sub.id}/deliveries?limit=2&offset=1`);
  t.is(page.statusCode, 200);
  t.deepEqual(page.body.pagination, { limit: 2, offset: 1, count: 2, total: 3, has_more: false });
  t.is((await deliveriesOf(w, sub.id, 'status=failed')).length, 0);
  const bad = await w.owner.api.get(`/orgs/${w.orgA}/webhooks/${sub.id}/deliveries?status=lost`);
  t.is(bad.statusCode, 400);
  t.regex(bad.body.message, /"status" must be one of/);
});
