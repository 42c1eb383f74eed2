import test from 'ava';
import {
  SECRET,
  deliveriesOf,
  emit,
  receiver,
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
  w = await webhookWorld('whdel');
  rx = await receiver();
});
test.after.always(async () => {
  await rx?.close();
  await w?.srv.stop();
});

const DELIVERY_ID = /^whd_[0-7][0-9a-hjkmnp-tv-z]{25}$/;

test.serial('an emitted event is delivered for real: CloudEvents body, both signatures valid with the secret', async (t) => {
  const sub = await subscribe(w, { url: `${rx.url}?a=1`, events: ['manual.*'] });
  const event = await emit(w, { type: 'manual.deploy', payload: { job_id: 'j1', status: 'ok' } });
  const got = await until(async () => rx.received.find((r) => JSON.parse(r.body).id === event.id), 'the delivery');
  t.is(got.path, '/hook?a=1');
  const body = JSON.parse(got.body);
  t.deepEqual(body, {
    specversion: '1.0',
    type: 'manual.deploy',
    source: `svc://orgs/${w.orgA}/projects/${w.projectA}`,
    id: event.id,
    time: body.time,
    datacontenttype: 'application/json',
    data: { job_id: 'j1', status: 'ok' },
  });
  t.regex(body.time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  t.true(svcSignatureValid(got, SECRET), 'X-Svc-Signature-256 verifies with the secret');
  t.false(svcSignatureValid(got, `${SECRET}x`), 'and not with another');
  t.true(standardSignatureValid(got, SECRET), 'Standard Webhooks signature verifies with the secret as key');
  t.false(standardSignatureValid({ ...got, body: got.body.replace('j1', 'j2') }, SECRET), 'a changed body does not verify');
  t.is(got.headers['webhook-id'], event.id, 'webhook-id is the event id, stable across retries and replays');
  t.regex(String(got.headers['x-svc-delivery']), DELIVERY_ID);
  t.regex(String(got.headers['content-type']), /^application\/cloudevents\+json/);

  const [delivery] = await until(async () => {
    const list = await deliveriesOf(w, sub.id);
    return list.length === 1 && list[0].status === 'succeeded' ? list : null;
  }, 'the delivery recorded');
  t.like(delivery, {
    id: got.headers['x-svc-delivery'],
    subscription_id: sub.id,
    event_id: event.id,
    event_type: 'manual.deploy',
    kind: 'event',
    status: 'succeeded',
    attempts: 1,
    response_status: 200,
    response_body: 'ok',
    error: null,
    next_attempt_at: null,
  });
  t.truthy(delivery.completed_at);
});

test.serial('a whsec_ secret is used as a Standard Webhooks key (base64-decoded)', async (t) => {
  const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
  await subscribe(w, { url: `${rx.url}/whsec`, events: ['manual.whsec'], secret });
  const event = await emit(w, { type: 'manual.whsec' });
  const got = await until(async () => rx.received.find((r) => r.path === '/hook/whsec' && JSON.parse(r.body).id === event.id), 'the delivery');
  t.true(standardSignatureValid(got, secret));
  t.true(svcSignatureValid(got, secret), 'the X-Svc scheme signs with the secret as written');
});

test.serial('patterns, the job.* short names, project scope and filters decide who receives an event', async (t) => {
  const at = (name: string) => `${rx.url}/match-${name}`;
  const subs = {
    short: await subscribe(w, { url: at('short'), events: ['job.failed'] }),
    prefix: await subscribe(w, { url: at('prefix'), events: ['system.job.*'] }),
    suffix: await subscribe(w, { url: at('suffix'), events: ['*.failed'] }),
    scoped: await subscribe(w, { url: at('scoped'), events: ['*'] }, w.projectA2),
    agent: await subscribe(w, { url: at('agent'), events: ['*'], filter: { agent: 'coder*' } }),
    project: await subscribe(w, { url: at('project'), events: ['*'], filter: { project_id: w.projectA2 } }),
    off: await subscribe(w, { url: at('off'), events: ['*'], enabled: false }),
  };
  const failed = await emit(w, { type: 'system.job.failed', source: 'system', payload: { job_id: 'x', agent: 'coder-1' } });
  const completed = await emit(w, { type: 'system.job.attempt.completed', source: 'system', payload: { assignee: 'reviewer' } });
  const inA2 = await emit(w, { type: 'manual.note', project_id: w.projectA2, payload: { agent_slug: 'coder' } });
  await emit(w, { type: 'system.job.failed', source: 'system', project_id: w.projectB, payload: { agent: 'coder' } });

  const expected: Record<keyof typeof subs, string[]> = {
    short: [failed.id],
    prefix: [failed.id, completed.id],
    suffix: [failed.id],
    scoped: [inA2.id],
    agent: [failed.id, inA2.id],
    project: [inA2.id],
    off: [],
  };
  const seen = (name: string) =>
    rx.received
      .filter((r) => r.path === `/hook/match-${name}`)
      .map((r) => JSON.parse(r.body).id)
      .sort();
  await until(async () => Object.entries(expected).every(([name, ids]) => seen(name).length >= ids.length), 'every expected delivery');
  await new Promise((r) => setTimeout(r, 400)); // nothing more arrives
  for (const [name, ids] of Object.entries(expected)) t.deepEqual(seen(name), [...ids].sort(), name);
  t.is((await deliveriesOf(w, subs.off.id)).length, 0, 'a disabled subscription gets no deliveries');
});

test.serial('a failing receiver is retried on the configured schedule until it answers 2xx', async (t) => {
  rx.reply = (r) =>
    r.path === '/hook/flaky' && rx.received.filter((x) => x.path === '/hook/flaky').length <= 3 ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' };
  const sub = await subscribe(w, { url: `${rx.url}/flaky`, events: ['manual.flaky'] });
  await emit(w, { type: 'manual.flaky' });
  const retrying = await until(async () => (await deliveriesOf(w, sub.id)).find((d) => d.status === 'retrying'), 'a retry to be scheduled');
  // The scaled retry windows are short (150–450 ms): a slow poll may first see the 2nd or 3rd retry waiting.
  t.like(retrying, { response_status: 503, response_body: 'busy', error: null });
  t.true(retrying.attempts >= 1 && retrying.attempts <= 3, `attempts ${retrying.attempts}`);
  t.truthy(retrying.next_attempt_at);
  const done = await until(async () => (await deliveriesOf(w, sub.id)).find((d) => d.status === 'succeeded'), 'the delivery to succeed', 15_000);
  t.like(done, { attempts: 4, response_status: 200, next_attempt_at: null });
  const times = rx.received.filter((x) => x.path === '/hook/flaky').map((x) => x.at);
  t.is(times.length, 4, 'one request per attempt, no duplicates');
  const gaps = times.slice(1).map((at, i) => at - times[i]);
  [150, 300, 450].forEach((delay, i) => t.true(gaps[i] >= delay - 20, `retry ${i + 1} waited ${gaps[i]} ms (≥ ${delay})`));
  t.true(
    new Set(rx.received.filter((x) => x.path === '/hook/flaky').map((x) => x.headers['x-svc-delivery'])).size === 1,
    'every attempt carries the same delivery id',
  );
  rx.reply = () => ({ status: 200, body: 'ok' });
});

test.serial('after the last retry a delivery fails for good: 1 + 5 attempts; long bodies are stored cut to 4096', async (t) => {
  rx.reply = (r) => (r.path === '/hook/down' ? { status: 500, body: 'x'.repeat(5000) } : { status: 200, body: 'ok' });
  const sub = await subscribe(w, { url: `${rx.url}/down`, events: ['manual.down'] });
  await emit(w, { type: 'manual.down' });
  const failed = await until(async () => (await deliveriesOf(w, sub.id)).find((d) => d.status === 'failed'), 'the delivery to fail', 20_000);
  t.like(failed, { attempts: 6, response_status: 500, next_attempt_at: null });
  t.is(failed.response_body.length, 4096);
  t.is(rx.received.filter((x) => x.path === '/hook/down').length, 6);
  const now = (await w.owner.api.get(`/orgs/${w.orgA}/webhooks/${sub.id}`)).body;
  t.like(now, { enabled: true, consecutive_failures: 6 });
  rx.reply = () => ({ status: 200, body: 'ok' });
});

test.serial('a receiver answering NUL bytes, or a body whose cut splits a surrogate pair, is recorded (U+FFFD), beside other deliveries', async (t) => {
  const cutPair = `${'x'.repeat(4095)}\u{1F600}`; // the 4096-character cut keeps only the emoji's high surrogate
  rx.reply = (r) =>
    r.path === '/hook/nul' ? { status: 200, body: 'a\u0000b' } : r.path === '/hook/cut' ? { status: 200, body: cutPair } : { status: 200, body: 'ok' };
  const nul = await subscribe(w, { url: `${rx.url}/nul`, events: ['manual.hostile'] });
  const cut = await subscribe(w, { url: `${rx.url}/cut`, events: ['manual.hostile'] });
  const plain = await subscribe(w, { url: `${rx.url}/plain`, events: ['manual.hostile'] });
  await emit(w, { type: 'manual.hostile' });
  const recorded = async (id: string) => (await deliveriesOf(w, id)).find((d) => d.status === 'succeeded');
  const [a, b, c] = await until(
    async () => {
      const all = await Promise.all([nul, cut, plain].map((s) => recorded(s.id)));
      return all.every(Boolean) ? all : null;
    },
    'the three deliveries recorded',
    10_000,
  );
  t.is(a.response_body, 'a\uFFFDb');
  t.is(b.response_body, `${'x'.repeat(4095)}\uFFFD`);
  t.is(c.response_body, 'ok');
  t.is(rx.received.filter((x) => ['/hook/nul', '/hook/cut', '/hook/plain'].includes(x.path)).length, 3, 'each sent once');
  for (const s of [nul, cut, plain]) await w.owner.api.delete(`/orgs/${w.orgA}/webhooks/${s.id}`);
  rx.reply = () => ({ status: 200, body: 'ok' });
});

test.serial('no answer within the timeout is a failed attempt with the reason', async (t) => {
  rx.reply = (r) => (r.path === '/hook/slow' ? { status: 200, delayMs: 2_500 } : { status: 200, body: 'ok' });
  const sub = await subscribe(w, { url: `${rx.url}/slow`, events: ['manual.slow'] });
  await emit(w, { type: 'manual.slow' });
  const attempt = await until(async () => (await deliveriesOf(w, sub.id)).find((d) => d.attempts >= 1), 'the first attempt', 10_000);
  t.like(attempt, { response_status: null, error: 'no answer within 2000 ms' });
  t.true(attempt.duration_ms >= 1_900);
  await w.owner.api.delete(`/orgs/${w.orgA}/webhooks/${sub.id}`);
  rx.reply = () => ({ status: 200, body: 'ok' });
});

test.serial('an event routed to a subscription twice gets one delivery, keyed app_link:<subscription>:<event>', async (t) => {
  const sub = await subscribe(w, { url: `${rx.url}/twice`, events: ['manual.twice'] });
  const event = await emit(w, { type: 'manual.twice' });
  const first = await until(async () => (await deliveriesOf(w, sub.id)).find((d) => d.status === 'succeeded'), 'the first delivery');
  t.is(first.dedupe_key, `app_link:${sub.id}:${event.id}`);
  // The same source event comes through the outbox again, after its delivery has ended.
  await w.db('webhook_outbox').insert({ event_id: event.id });
  await until(async () => Number((await w.db('webhook_outbox').where({ event_id: event.id }).count({ n: '*' }).first())!.n) === 0, 'the outbox to drain');
  await new Promise((r) => setTimeout(r, 300));
  const all = await deliveriesOf(w, sub.id);
  t.is(all.length, 1, JSON.stringify(all));
  t.is(rx.received.filter((r) => r.path === '/hook/twice').length, 1, 'sent once');
  await w.owner.api.delete(`/orgs/${w.orgA}/webhooks/${sub.id}`);
});
