import test from 'ava';
import { merge } from '../../core/config/load.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { SCALED, emit, receiver, sleep, subscribe, until, webhookWorld, type Receiver, type WebhookWorld } from './helpers.ts';

let database: TestDatabase;
let w: WebhookWorld;
let second: TestServer;
let rx: Receiver;
test.before(async () => {
  database = await createTestDatabase();
  // Every first attempt fails here: far more than 10 in a row, which would otherwise disable the subscription.
  // A send that times out counts as failed and is sent again, as it should be; on a loaded machine 100 deliveries
  // at once can take SCALED's 2 s, so the timeout is long here: what this test counts is retries of refused sends.
  const overrides = { webhooks: { disable_after_failures: 1_000, timeout_ms: 15_000 } };
  w = await webhookWorld('whrep', { database, overrides });
  second = await startTestServer({ database, overrides: merge(SCALED, overrides) });
  rx = await receiver();
});
test.after.always(async () => {
  await rx?.close();
  await second?.stop();
  await w?.srv.stop();
  await database?.drop();
});

test('two orchestrators: every event is delivered, and retried, exactly once', async (t) => {
  // The first attempt of every delivery fails; the retry (scheduled on Agenda, shared by both) succeeds.
  const attempts = new Map<string, number>();
  rx.reply = (r) => {
    const id = String(r.headers['x-svc-delivery']);
    attempts.set(id, (attempts.get(id) ?? 0) + 1);
    return attempts.get(id) === 1 ? { status: 500 } : { status: 200, body: 'ok' };
  };
  const sub = await subscribe(w, { url: rx.url, events: ['manual.many'] });
  const N = 100;
  const ids = new Set<string>();
  await Promise.all(Array.from({ length: N }, async (_, i) => ids.add((await emit(w, { type: 'manual.many', payload: { i } })).id)));
  await until(
    async () => {
      const { n } = (await w.db('webhook_deliveries').where({ subscription_id: sub.id, status: 'succeeded' }).count({ n: '*' }).first())!;
      return Number(n) === N;
    },
    'every delivery to succeed',
    60_000,
  );
  await sleep(500);
  t.is(attempts.size, N, 'one delivery per event');
  t.true(
    [...attempts.values()].every((n) => n === 2),
    'each sent twice: the failed attempt and one retry',
  );
  const received = new Set(rx.received.map((r) => JSON.parse(r.body).id));
  t.deepEqual([...received].sort(), [...ids].sort());
  const rows = await w.db('webhook_deliveries').where({ subscription_id: sub.id });
  t.true(rows.every((d: any) => d.attempts === 2 && d.status === 'succeeded'));
});
