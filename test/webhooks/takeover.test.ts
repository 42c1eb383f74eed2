import test from 'ava';
import { merge } from '../../core/config/load.ts';
import { WorkEngine } from '../../core/work/engine.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { SCALED, emit, receiver, sleep, subscribe, until, webhookWorld, type Receiver, type WebhookWorld } from './helpers.ts';

/**
 * A delivery's lease abandoned mid-way (docs/architecture.md, "Work engine"): orchestrator A sends it
 * and then stops renewing its lease while the receiver is still answering (as a process that hangs or
 * dies would); the reaper (B's or A's own) frees the lease and the delivery is sent again under a new one. The receiver gets it at most twice,
 * the delivery is recorded once (B's attempt), and A's late answer changes nothing.
 */
const OVERRIDES = { work: { lease_seconds: 0.6, poll_ms: 100 } };

let database: TestDatabase;
let w: WebhookWorld;
let b: TestServer | undefined;
let rx: Receiver;
test.before(async () => {
  database = await createTestDatabase();
  w = await webhookWorld('whtake', { database, overrides: OVERRIDES });
  rx = await receiver();
});
test.after.always(async () => {
  await rx?.close();
  await b?.stop();
  await w?.srv.stop();
  await database?.drop();
});

test('a delivery whose lease is abandoned mid-send is sent again under a new lease and recorded once', async (t) => {
  const sub = await subscribe(w, { url: `${rx.url}/takeover`, events: ['manual.takeover'] });
  // A's first request is answered late (after its lease has run out); any later one at once.
  rx.reply = (_r, i) => (i === 0 ? { status: 200, body: 'late', delayMs: 1_500 } : { status: 200, body: 'ok' });
  const engineA = w.srv.kernel.container.resolve(WorkEngine);
  const beat = engineA.repo.heartbeat.bind(engineA.repo);
  // A stops renewing its leases (its beats report success but write nothing): as if it hung.
  engineA.repo.heartbeat = async () => ({ cancel: false });
  const event = await emit(w, { type: 'manual.takeover' });
  const first = await until(async () => rx.received[0], "A's request");
  t.is(JSON.parse(first.body).id, event.id);

  b = await startTestServer({ database, overrides: merge(SCALED, OVERRIDES) });
  const second = await until(async () => rx.received[1], 'the request after the lease was reaped', 10_000);
  t.is(second.headers['x-svc-delivery'], first.headers['x-svc-delivery'], 'the same delivery, sent again');

  const delivery = await until(async () => {
    const d = await w.db('webhook_deliveries').where({ subscription_id: sub.id }).first();
    return d?.status === 'succeeded' ? d : null;
  }, 'the delivery recorded');
  // A's late answer arrives after B recorded: fenced off, it writes nothing.
  await sleep(2_000);
  engineA.repo.heartbeat = beat;
  const after = await w.db('webhook_deliveries').where({ subscription_id: sub.id });
  t.is(after.length, 1, 'one delivery');
  t.like(after[0], { id: delivery.id, status: 'succeeded', attempts: 1, response_body: 'ok' });
  t.is(rx.received.length, 2, 'sent at most twice: once per lease');
  const item = await w.db('work_items').where({ queue: 'webhooks', key: delivery.id }).first();
  t.like(item, { status: 'done', attempts: 2 });
});
