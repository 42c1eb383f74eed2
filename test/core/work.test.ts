import test from 'ava';
import { createKnex, type Db } from '../../core/db/knex.ts';
import { createLogger } from '../../core/logger.ts';
import { Metrics } from '../../core/metrics.ts';
import { LeaseLost } from '../../core/errors.ts';
import { WorkEngine } from '../../core/work/engine.ts';
import { WorkCancelled, WorkFailedForGood, type QueueDefinition, type WorkContext } from '../../core/work/queue.ts';
import { retryDelayMs } from '../../core/work/retry.ts';
import type { RoleService } from '../../core/roles.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

/**
 * The work engine (core/work) attacked on a real PostgreSQL: concurrent claimers, stale owners,
 * owners that die, failures that retry and end in the dead letters, cancels.
 */
let database: TestDatabase;
const pools: Db[] = [];
const services: RoleService[] = [];
const logger = createLogger('silent');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(check: () => Promise<T | undefined | null | false>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await check();
    if (found) return found;
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(20);
  }
}

/** An engine as one process has it: its own pool and owner name. */
function engine(opts: { leaseMs?: number; pollMs?: number } = {}) {
  const db = createKnex(database.url, 6, logger);
  pools.push(db);
  const metrics = new Metrics();
  return {
    db,
    metrics,
    engine: new WorkEngine({ db, databaseUrl: database.url, logger, metrics, leaseMs: opts.leaseMs ?? 1_500, pollMs: opts.pollMs ?? 100 }),
  };
}

const started = async (service: RoleService) => {
  services.push(service);
  await service.start();
  return service;
};

const status = async (db: Db, queue: string, key: string) => (await db('work_items').where({ queue, key }).first())?.status as string | undefined;

test.before(async () => {
  database = await createTestDatabase();
});

test.after.always(async () => {
  for (const s of services) await s.stop();
  for (const db of pools) await db.destroy();
  await database?.drop();
});

test('two claimers never take the same item: every item runs exactly once', async (t) => {
  const seen: string[] = [];
  const def = (name: string): QueueDefinition<{ n: number }> => ({
    name,
    concurrency: 8,
    batch: 5,
    run: async (ctx) => {
      seen.push(ctx.key);
      await sleep(Math.random() * 5);
    },
  });
  const a = engine();
  const b = engine();
  const qa = a.engine.define(def('claims'));
  const qb = b.engine.define(def('claims'));
  await a.db.transaction(async (trx) => {
    for (let i = 0; i < 300; i++) await qa.enqueue(`k${i}`, { n: i }, trx);
  });
  await Promise.all([started(qa.service()), started(qb.service())]);
  await until(async () => Number((await a.db('work_items').where({ queue: 'claims', status: 'done' }).count({ n: '*' }))[0].n) === 300);
  t.is(seen.length, 300, 'no item ran twice');
  t.is(new Set(seen).size, 300);
  const owners = await a.db('work_items').where({ queue: 'claims' }).where('attempts', '>', 1).count({ n: '*' });
  t.is(Number(owners[0].n), 0, 'every item was claimed once');
});

test("a stale owner's writes change nothing: its fence throws and its transaction rolls back; its end and requeue are refused", async (t) => {
  const a = engine({ leaseMs: 60_000 });
  const b = engine({ leaseMs: 60_000 });
  await a.db.schema.createTable('probe_writes', (tb) => {
    tb.text('key');
    tb.text('writer');
  });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let staleError: unknown = null;
  const run = (writer: string, wait: boolean) => async (ctx: WorkContext<Record<string, unknown>>) => {
    if (wait) await gate;
    await (writer === 'a' ? a : b).db
      .transaction(async (trx) => {
        await trx('probe_writes').insert({ key: ctx.key, writer });
        await ctx.fence(trx);
      })
      .catch((err) => {
        staleError = err;
        throw err;
      });
  };
  const qa = a.engine.define({ name: 'fenced', run: run('a', true) });
  const qb = b.engine.define({ name: 'fenced', run: run('b', false) });
  const item = await a.db.transaction((trx) => qa.acceptHere('x', {}, trx));
  const running = qa.execute(item);
  // A's lease runs out (a long pause) and B's reaper frees it; B claims and finishes it.
  await a
    .db('work_items')
    .where({ id: item.id })
    .update({ lease_expires_at: a.db.raw("now() - interval '1 second'") });
  t.is(await qb.reap(), 1);
  await b.db('work_items').where({ id: item.id }).update({ run_at: b.db.fn.now() });
  await qb.claimAndRun(() => false);
  await until(async () => (await status(a.db, 'fenced', 'x')) === 'done');
  release();
  await running;
  t.true(staleError instanceof LeaseLost, 'the stale owner learns it lost the lease');
  t.deepEqual(await a.db('probe_writes').select('writer'), [{ writer: 'b' }], "only the lease holder's write stays");
  const repo = a.engine.repo;
  const stale = { id: item.id, token: item.lease_token! };
  t.false(await repo.end(stale, 'done', null));
  t.false(await repo.requeue(stale, 0, 'late'));
  t.is(await repo.heartbeat(stale, 1_000), null);
  const row = await a.db('work_items').where({ id: item.id }).first();
  t.is(row.status, 'done');
  t.is(row.attempts, 2);
});

test("a dead owner's item is reclaimed and finished elsewhere within seconds", async (t) => {
  const dead = engine({ leaseMs: 600 });
  const alive = engine({ leaseMs: 600 });
  const ran: string[] = [];
  const qDead = dead.engine.define({ name: 'reclaim', run: async () => void ran.push('dead'), retry: { initialMs: 50, factor: 2, maxMs: 1_000 } });
  const qAlive = alive.engine.define({ name: 'reclaim', run: async () => void ran.push('alive'), retry: { initialMs: 50, factor: 2, maxMs: 1_000 } });
  // Accepted by the process that then dies: it never runs nor beats.
  await dead.db.transaction((trx) => qDead.acceptHere('orphan', {}, trx));
  const at = Date.now();
  await started(qAlive.service());
  await until(async () => (await status(alive.db, 'reclaim', 'orphan')) === 'done', 5_000);
  const seconds = (Date.now() - at) / 1000;
  t.deepEqual(ran, ['alive']);
  t.true(seconds < 3, `reclaimed after ${seconds} s`);
  t.regex((await alive.metrics.render()).text, /svc_work_reaped_total\{queue="reclaim",outcome="retried"\} 1/);
});

test('a live owner keeps its lease past the lease time by beating', async (t) => {
  const a = engine({ leaseMs: 600 });
  const b = engine({ leaseMs: 600 });
  const qa = a.engine.define({ name: 'beats', run: async () => void (await sleep(2_000)) });
  const qb = b.engine.define({ name: 'beats', run: async () => t.fail('a live lease was taken') });
  const item = await a.db.transaction((trx) => qa.acceptHere('long', {}, trx));
  await started(qb.service());
  await qa.execute(item);
  const row = await a.db('work_items').where({ id: item.id }).first();
  t.is(row.status, 'done');
  t.is(row.attempts, 1);
});

test('failures retry with growing backoff, then go to the dead letters with the domain told once', async (t) => {
  const { db, engine: e } = engine();
  const times: number[] = [];
  const buried: string[] = [];
  const q = e.define<{ n: number }>({
    name: 'flaky',
    maxAttempts: 4,
    retry: { initialMs: 150, factor: 2, maxMs: 10_000 },
    run: async (ctx) => {
      times.push(Date.now());
      throw new Error(`boom ${ctx.attempt}`);
    },
    dead: async (key, payload, error, trx) => {
      t.truthy(await trx('work_items').where({ queue: 'flaky', key }).first());
      buried.push(`${key}:${payload.n}:${error}`);
    },
  });
  await db.transaction((trx) => q.enqueue('f', { n: 7 }, trx));
  await started(q.service());
  await until(async () => (await status(db, 'flaky', 'f')) === 'dead', 10_000);
  t.is(times.length, 4);
  const gaps = times.slice(1).map((at, i) => at - times[i]);
  t.true(gaps[0] >= 75, `first gap ${gaps[0]} ms`);
  t.true(gaps[1] >= 150 && gaps[2] >= 300, `gaps ${gaps.join(', ')} ms`);
  t.deepEqual(buried, ['f:7:boom 4']);
  const row = await db('work_items').where({ queue: 'flaky', key: 'f' }).first();
  t.is(row.last_error, 'boom 4');
  t.is(row.lease_token, null);
});

test('a failure no retry mends goes to the dead letters at once', async (t) => {
  const { db, engine: e } = engine();
  const q = e.define({
    name: 'doomed',
    run: async () => {
      throw new WorkFailedForGood('the spec is gone');
    },
  });
  const item = await db.transaction((trx) => q.acceptHere('d', {}, trx));
  await q.execute(item);
  const row = await db('work_items').where({ id: item.id }).first();
  t.is(row.status, 'dead');
  t.is(row.attempts, 1);
});

test('the retry delay doubles with equal jitter and stops at its maximum', (t) => {
  const policy = { initialMs: 1_000, factor: 2, maxMs: 30_000 };
  t.deepEqual(
    [1, 2, 3, 4].map((a) => retryDelayMs(a, policy, () => 0)),
    [500, 1_000, 2_000, 4_000],
  );
  t.deepEqual(
    [1, 2, 3].map((a) => retryDelayMs(a, policy, () => 1)),
    [1_000, 2_000, 4_000],
  );
  t.is(
    retryDelayMs(40, policy, () => 1),
    30_000,
  );
});

test('cancel: a queued item ends cancelled and never runs; a running one has its signal aborted and ends cancelled', async (t) => {
  const { db, engine: e } = engine();
  const reasons: unknown[] = [];
  const q = e.define({
    name: 'cancels',
    run: (ctx) =>
      new Promise<void>((resolve) => {
        ctx.signal.addEventListener('abort', () => {
          reasons.push(ctx.signal.reason);
          resolve();
        });
      }),
  });
  await db.transaction((trx) => q.enqueue('queued', {}, trx));
  t.is(await db.transaction((trx) => q.cancel('queued', trx)), 'cancelled');
  const item = await db.transaction((trx) => q.acceptHere('running', {}, trx));
  const running = q.execute(item);
  t.is(await db.transaction((trx) => q.cancel('running', trx)), 'requested');
  await running;
  t.true(reasons[0] instanceof WorkCancelled);
  t.is(await status(db, 'cancels', 'running'), 'cancelled');
  t.is(await status(db, 'cancels', 'queued'), 'cancelled');
  t.is(await db.transaction((trx) => q.cancel('running', trx)), null, 'an ended item has nothing to cancel');
});

test('per-queue concurrency: one process runs at most `concurrency` items of a queue at once', async (t) => {
  const { db, engine: e } = engine();
  let now = 0;
  let most = 0;
  const q = e.define({
    name: 'narrow',
    concurrency: 2,
    run: async () => {
      most = Math.max(most, ++now);
      await sleep(30);
      now--;
    },
  });
  await db.transaction(async (trx) => {
    for (let i = 0; i < 10; i++) await q.enqueue(`n${i}`, {}, trx);
  });
  await started(q.service());
  await until(async () => Number((await db('work_items').where({ queue: 'narrow', status: 'done' }).count({ n: '*' }))[0].n) === 10);
  t.is(most, 2);
});

test('metrics per queue: claims, ends by outcome and items by status', async (t) => {
  const { db, engine: e, metrics } = engine();
  const q = e.define({ name: 'measured', run: async () => undefined });
  await db.transaction((trx) => q.enqueue('m', {}, trx));
  await started(q.service());
  await until(async () => (await status(db, 'measured', 'm')) === 'done');
  const text = (await metrics.render()).text;
  t.regex(text, /svc_work_claimed_total\{queue="measured"\} 1/);
  t.regex(text, /svc_work_ended_total\{queue="measured",outcome="done"\} 1/);
  t.regex(text, /svc_work_items\{/);
});

test('retention: done and cancelled items go after their time, dead letters after theirs, queued ones never', async (t) => {
  const { db, engine: e } = engine();
  const q = e.define({ name: 'kept', run: async () => undefined });
  await db.transaction((trx) =>
    Promise.all(['done-old', 'cancelled-old', 'dead-old', 'dead-recent', 'queued-old', 'running-old', 'done-recent'].map((k) => q.enqueue(k, {}, trx))),
  );
  const ended = (key: string, status: string, daysAgo: number) =>
    db('work_items')
      .where({ queue: 'kept', key })
      .update({ status, finished_at: new Date(Date.now() - daysAgo * 86_400_000) });
  await ended('done-old', 'done', 8);
  await ended('cancelled-old', 'cancelled', 8);
  await ended('done-recent', 'done', 1);
  await ended('dead-old', 'dead', 31);
  await ended('dead-recent', 'dead', 8);
  await ended('queued-old', 'queued', 40);
  const week = new Date(Date.now() - 7 * 86_400_000);
  const month = new Date(Date.now() - 30 * 86_400_000);
  t.is(await e.prune(week, month), 3);
  t.deepEqual((await db('work_items').where({ queue: 'kept' }).orderBy('key').pluck('key')) as string[], [
    'dead-recent',
    'done-recent',
    'queued-old',
    'running-old',
  ]);
});
