import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import pino from 'pino';
import schedulerAdapter from '../../adapters/scheduler/agenda/index.ts';
import type { AdapterDeps } from '../../core/adapters.ts';
import type { Scheduler } from '../../core/ports/scheduler.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { MongoClient } from 'mongodb';

// The machine's PostgreSQL 15 (trust auth) unless the environment names another server.
process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/postgres';

let database: TestDatabase;
let client: pg.Client;
test.before(async () => {
  database = await createTestDatabase();
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
});
test.after.always(async () => {
  await client?.end();
  await database?.drop();
});

let tables = 0;
/** Each test gets its own jobs table (and so its own NOTIFY channel); teardown stops the instance. */
function tableName(): string {
  return `jobs_${process.pid}_${++tables}`;
}

/**
 * The scheduler's contract runs on every backend at hand: the service's PostgreSQL always, MongoDB
 * when MONGODB_URL names a server (none can be installed on these machines, and none is faked).
 */
interface Backend {
  name: 'postgres' | 'mongodb';
  options: Record<string, unknown>;
  /** Stored schedules of `table`, optionally of one job name, in a backend-neutral shape. */
  schedules(
    table: string,
    name?: string,
  ): Promise<Array<{ name: string; repeat_interval: string | null; repeat_timezone: string | null; data: Record<string, unknown>; next_run_at: Date | null }>>;
}

const postgres: Backend = {
  name: 'postgres',
  options: {},
  async schedules(table, name) {
    const { rows } = await client.query(
      `SELECT name, repeat_interval, repeat_timezone, data, next_run_at FROM "${table}" ${name ? 'WHERE name = $1' : ''} ORDER BY name, data->>'v'`,
      name ? [name] : [],
    );
    return rows;
  },
};

const MONGODB_URL = process.env.MONGODB_URL;
let mongoClient: MongoClient | null = null;
const mongodb: Backend = {
  name: 'mongodb',
  options: { backend: 'mongodb', mongodb_url: MONGODB_URL },
  async schedules(table, name) {
    mongoClient ??= await new MongoClient(MONGODB_URL!).connect();
    const docs = await mongoClient
      .db()
      .collection(table)
      .find(name ? { name } : {})
      .toArray();
    return docs
      .map((d) => ({
        name: d.name,
        repeat_interval: d.repeatInterval ?? null,
        repeat_timezone: d.repeatTimezone ?? null,
        data: d.data ?? {},
        next_run_at: d.nextRunAt ?? null,
      }))
      .sort((a, b) => a.name.localeCompare(b.name) || String(a.data.v ?? '').localeCompare(String(b.data.v ?? '')));
  },
};
test.after.always(() => mongoClient?.close());

const BACKENDS = MONGODB_URL ? [postgres, mongodb] : [postgres];
if (!MONGODB_URL) {
  test.skip('mongodb: the scheduler contract against a real MongoDB — not run: set MONGODB_URL to a MongoDB server (none can be installed on these machines)', () => {});
}

async function makeScheduler(t: ExecutionContext, table: string, options: Record<string, unknown> = {}, backend: Backend = postgres): Promise<Scheduler> {
  const { value, error } = schedulerAdapter.options.validate({ table_name: table, process_every_ms: 200, ...backend.options, ...options });
  if (error) throw error;
  const deps = { logger: pino({ level: 'silent' }), databaseUrl: database.url, config: {}, db: {} } as unknown as AdapterDeps;
  const scheduler = await schedulerAdapter.create(value, deps);
  t.teardown(() => scheduler.stop());
  return scheduler;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(t: ExecutionContext, what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !check(); await sleep(50)) {
    if (Date.now() > deadline) t.fail(`timed out waiting for: ${what}`);
  }
}

/** Postgres keeps the titles the contract always had; another backend's tests say which. */
const titled = (b: Backend, title: string) => (b.name === 'postgres' ? title : `${b.name}: ${title}`);

for (const backend of BACKENDS) {
  test(titled(backend, 'a scheduled job runs once at its time, with its data'), async (t) => {
    const scheduler = await makeScheduler(t, tableName(), {}, backend);
    const runs: Array<{ data: Record<string, unknown>; at: number }> = [];
    scheduler.define('ping', async (data) => void runs.push({ data, at: Date.now() }));
    await scheduler.start();
    const when = Date.now() + 200;
    await scheduler.schedule(new Date(when), 'ping', { n: 1 });
    await until(t, 'ping ran', () => runs.length === 1);
    t.deepEqual(runs[0].data, { n: 1 });
    t.true(runs[0].at >= when - 5);
    await sleep(600);
    t.is(runs.length, 1);
  });

  test(titled(backend, 'every() runs repeatedly, as one schedule however often it is declared'), async (t) => {
    const table = tableName();
    const scheduler = await makeScheduler(t, table, {}, backend);
    let runs = 0;
    scheduler.define('tick', async () => void (runs += 1));
    await scheduler.every(300, 'tick', { a: 1 });
    await scheduler.every(300, 'tick', { a: 1 });
    await scheduler.start();
    await until(t, 'three ticks', () => runs >= 3);
    t.is((await backend.schedules(table, 'tick')).length, 1);
  });

  test(titled(backend, 'two instances on one database run each scheduled job exactly once'), async (t) => {
    const table = tableName();
    const [a, b] = await Promise.all([makeScheduler(t, table, {}, backend), makeScheduler(t, table, {}, backend)]);
    const runs = new Map<number, string[]>();
    for (const [instance, label] of [
      [a, 'a'],
      [b, 'b'],
    ] as const) {
      instance.define('once', async (data) => {
        const id = data.id as number;
        runs.set(id, [...(runs.get(id) ?? []), label]);
        await sleep(50);
      });
    }
    await Promise.all([a.start(), b.start()]);
    const when = new Date(Date.now() + 300);
    for (let id = 0; id < 6; id += 1) await a.schedule(when, 'once', { id });
    await until(t, 'all six ran', () => runs.size === 6);
    await sleep(1000);
    t.deepEqual(
      [...runs.values()].map((who) => who.length),
      [1, 1, 1, 1, 1, 1],
    );
  });

  test(titled(backend, 'a failing job is retried after each delay, then runs no more'), async (t) => {
    const scheduler = await makeScheduler(t, tableName(), {}, backend);
    const flaky: number[] = [];
    scheduler.define(
      'flaky',
      async () => {
        flaky.push(Date.now());
        if (flaky.length < 3) throw new Error(`failure ${flaky.length}`);
      },
      { retryDelaysMs: [300, 600] },
    );
    const hopeless: number[] = [];
    scheduler.define(
      'hopeless',
      async () => {
        hopeless.push(Date.now());
        throw new Error('always');
      },
      { retryDelaysMs: [200] },
    );
    await scheduler.start();
    await scheduler.schedule(new Date(), 'flaky');
    await scheduler.schedule(new Date(), 'hopeless');
    await until(t, 'flaky succeeded on its third run', () => flaky.length === 3);
    t.true(flaky[1] - flaky[0] >= 290, `first retry after ${flaky[1] - flaky[0]}ms`);
    t.true(flaky[2] - flaky[1] >= 590, `second retry after ${flaky[2] - flaky[1]}ms`);
    await until(t, 'hopeless retried once', () => hopeless.length === 2);
    await sleep(1200);
    t.is(flaky.length, 3);
    t.is(hopeless.length, 2);
  });

  test(titled(backend, 'cancel() removes matching schedules only'), async (t) => {
    const table = tableName();
    const scheduler = await makeScheduler(t, table, {}, backend);
    const ran: unknown[] = [];
    scheduler.define('later', async (data) => void ran.push(data.id));
    await scheduler.start();
    const when = new Date(Date.now() + 1000);
    await scheduler.schedule(when, 'later', { id: 'a', extra: true });
    await scheduler.schedule(when, 'later', { id: 'b' });
    t.is(await scheduler.cancel('later', { id: 'a' }), 1);
    await until(t, 'b ran', () => ran.includes('b'));
    await sleep(500);
    t.deepEqual(ran, ['b']);
    await scheduler.every(60_000, 'later', { id: 'c' });
    t.is(await scheduler.cancel('later'), 2);
    t.is((await backend.schedules(table)).length, 0);
  });

  test(titled(backend, 'a job running longer than the lock lifetime is kept locked, not run again elsewhere'), async (t) => {
    const table = tableName();
    const [a, b] = await Promise.all([
      makeScheduler(t, table, { lock_lifetime_ms: 1000 }, backend),
      makeScheduler(t, table, { lock_lifetime_ms: 1000 }, backend),
    ]);
    const runs: string[] = [];
    for (const [instance, label] of [
      [a, 'a'],
      [b, 'b'],
    ] as const) {
      instance.define('long', async () => {
        runs.push(label);
        await sleep(3000);
      });
    }
    await Promise.all([a.start(), b.start()]);
    await a.schedule(new Date(), 'long');
    await until(t, 'long started', () => runs.length === 1);
    await sleep(3500);
    t.is(runs.length, 1);
  });

  test(titled(backend, 'cron() keeps one schedule per key, in UTC, and replaces on re-sync'), async (t) => {
    const table = tableName();
    const [a, b] = await Promise.all([makeScheduler(t, table, {}, backend), makeScheduler(t, table, {}, backend)]);
    await a.cron('*/5 * * * *', 'report', { v: 1 }, 'project-1');
    // Two replicas re-syncing the same key at once still leave one row.
    await Promise.all([a.cron('0 3 * * *', 'report', { v: 2 }, 'project-1'), b.cron('0 3 * * *', 'report', { v: 2 }, 'project-1')]);
    await a.cron('0 * * * *', 'report', { v: 3 }, 'project-2');
    await a.cron('30 4 * * 1', 'digest', {}); // key defaults to the name
    await a.cron('30 5 * * 1', 'digest', {});
    const rows = await backend.schedules(table);
    t.is(rows.length, 3);
    const [digest, p1, p2] = rows;
    t.is(digest.repeat_interval, '30 5 * * 1');
    t.like(p1, { name: 'report', repeat_interval: '0 3 * * *', repeat_timezone: 'UTC' });
    t.is(p1.data.v, 2);
    t.is(p2.data.v, 3);
    const next = p1.next_run_at as Date;
    t.deepEqual([next.getUTCHours(), next.getUTCMinutes(), next.getUTCSeconds()], [3, 0, 0]);
    t.true(next.getTime() > Date.now());
    // The same key under another job name moves the schedule rather than adding one.
    await a.cron('0 6 * * *', 'report-v2', {}, 'project-2');
    const moved = (await backend.schedules(table)).filter((r) => r.data.__svc_schedule_key === 'project-2');
    t.deepEqual(
      moved.map((r) => r.name),
      ['report-v2'],
    );
  });

  test(titled(backend, 'cron() refuses expressions that are not standard 5-field cron'), async (t) => {
    const scheduler = await makeScheduler(t, tableName(), {}, backend);
    for (const bad of ['* * * * * *', '1 hour and 5 minutes', '61 * * * *', 'every day']) {
      await t.throwsAsync(scheduler.cron(bad, 'x'), { message: /cron/ }, bad);
    }
  });

  test(titled(backend, 'stop() waits for a running job to finish'), async (t) => {
    const scheduler = await makeScheduler(t, tableName(), {}, backend);
    let started = false;
    let finished = false;
    scheduler.define('slow', async () => {
      started = true;
      await sleep(500);
      finished = true;
    });
    await scheduler.start();
    await scheduler.schedule(new Date(), 'slow');
    await until(t, 'slow started', () => started);
    await scheduler.stop();
    t.true(finished);
    await scheduler.stop(); // idempotent
  });
}

test('options: defaults; mongodb needs its URL, and an unreachable one fails the start saying so', async (t) => {
  const { value } = schedulerAdapter.options.validate({});
  t.like(value, { backend: 'postgres', table_name: 'svc_scheduled_jobs', process_every_ms: 1000, default_concurrency: 5 });
  t.regex(String(schedulerAdapter.options.validate({ backend: 'mongodb' }).error), /mongodb_url/);
  t.truthy(schedulerAdapter.options.validate({ table_name: 'bad-name; drop' }).error);
  const mongo = schedulerAdapter.options.validate({ backend: 'mongodb', mongodb_url: 'mongodb://svc:hunter2@127.0.0.1:1/x', mongodb_connect_timeout_ms: 500 });
  t.falsy(mongo.error);
  const deps = { logger: pino({ level: 'silent' }), databaseUrl: database.url } as unknown as AdapterDeps;
  const err = await t.throwsAsync(Promise.resolve(schedulerAdapter.create(mongo.value, deps)));
  t.regex(err!.message, /^scheduler 'agenda': MongoDB at mongodb:\/\/svc:\*\*\*@127\.0\.0\.1:1\/x did not answer within 500 ms/);
  t.false(err!.message.includes('hunter2'), 'the password is never in the message');
});
