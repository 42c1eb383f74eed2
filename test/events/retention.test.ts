import test from 'ava';
import { Housekeeping } from '../../core/roles.ts';
import { prune } from '../../core/db/prune.ts';
import type { World } from '../jobs/claim-helpers.ts';
import { eventWorld, postEvent } from './helpers.ts';

/** History is kept for `retention.*_days` (90 and 30 by default): the orchestrator's housekeeping deletes what is older and finished. */
let w: World;
test.before(async () => {
  w = await eventWorld('retention');
});
test.after.always(() => w?.ctx.srv.stop());

const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000);
const housekeeping = () => w.ctx.srv.kernel.container.resolve(Housekeeping).run();

test.serial('routed events older than events_days go; pending ones and younger ones stay', async (t) => {
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await postEvent(w, { type: `retention.e${i}` })).id);
  const [oldDone, oldFailed, oldPending, young] = ids;
  await w.db('events').whereIn('id', [oldDone, young]).update({ status: 'completed' });
  await w.db('events').where({ id: oldFailed }).update({ status: 'failed' });
  await w
    .db('events')
    .whereIn('id', [oldDone, oldFailed, oldPending])
    .update({ created_at: daysAgo(91) });
  await w
    .db('events')
    .where({ id: young })
    .update({ created_at: daysAgo(89) });
  await housekeeping();
  const left = (await w.db('events').whereIn('id', ids).pluck('id')).sort();
  t.deepEqual(left, [oldPending, young].sort());
  t.is((await w.owner.api.get(`/projects/${w.projectA}/events/${oldDone}`)).statusCode, 404);
});

test.serial('finished webhook deliveries older than webhook_deliveries_days go; those still being delivered stay', async (t) => {
  const sub = await w.owner.api.post(`/projects/${w.projectA}/webhooks`, {
    url: 'http://127.0.0.1:9/hook',
    events: ['*'],
    secret: 'a-secret-of-enough-length',
  });
  t.is(sub.statusCode, 201, JSON.stringify(sub.body));
  const row = (id: string, status: string, completedDaysAgo: number | null) => ({
    id,
    subscription_id: sub.body.id,
    event_id: `evt_${id}`,
    event_type: 'retention.e',
    kind: 'event',
    status,
    completed_at: completedDaysAgo === null ? null : daysAgo(completedDaysAgo),
  });
  await w.db('webhook_deliveries').insert([row('d1', 'succeeded', 31), row('d2', 'failed', 40), row('d3', 'retrying', null), row('d4', 'succeeded', 29)]);
  await housekeeping();
  t.deepEqual((await w.db('webhook_deliveries').where({ subscription_id: sub.body.id }).pluck('id')).sort(), ['d3', 'd4']);
});

test.serial('0 days keeps everything; a backlog larger than one statement drains in batches', async (t) => {
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await postEvent(w, { type: `retention.keep${i}` })).id);
  await w
    .db('events')
    .whereIn('id', ids)
    .update({ status: 'completed', created_at: daysAgo(1000) });
  t.is(await prune(w.db, { table: 'events', at: 'created_at', statuses: ['completed'], days: 0 }), 0);
  t.is(
    await w
      .db('events')
      .whereIn('id', ids)
      .count({ n: '*' })
      .first()
      .then((r) => Number(r!.n)),
    3,
  );
  await w.db.raw(
    `INSERT INTO events (id, project_id, type, source, status, created_at)
     SELECT 'evt_bulk' || g, ?, 'retention.bulk', 'manual', 'completed', now() - interval '200 days' FROM generate_series(1, 12000) g`,
    [w.projectA],
  );
  t.is(await prune(w.db, { table: 'events', at: 'created_at', statuses: ['completed'], days: 90 }), 12_003);
});
