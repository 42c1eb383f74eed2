/**
 * Scheduler port on Agenda 6, storing its jobs in a table of the service's own Postgres database
 * (or, when configured, in MongoDB through @agendajs/mongo-backend).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agenda, type AgendaBackend, type BackoffStrategy, type Job } from 'agenda';
import { PostgresBackend } from '@agendajs/postgres-backend';
import Joi from 'joi';
import pg from 'pg';
import type { Logger } from 'pino';
import type { AdapterDeps } from '../../../core/adapters.ts';
import type { DefineOptions, ScheduledJobHandler, Scheduler } from '../../../core/ports/scheduler.ts';
import { defineAdapter } from '../../../core/sdk.ts';
import { cronProblem } from '../../../core/cron.ts';
import { mongoStorage } from './mongo.ts';
import { ReconnectingNotificationChannel } from './notification-channel.ts';

type Options = {
  backend: 'postgres' | 'mongodb';
  table_name: string;
  mongodb_url?: string;
  mongodb_connect_timeout_ms: number;
  process_every_ms: number;
  default_concurrency: number;
  max_concurrency: number;
  lock_lifetime_ms: number;
  stop_timeout_ms: number;
};

/** Field of a job's data that holds the `cron()` key; handlers never see it. */
const KEY_FIELD = '__svc_schedule_key';

const optionsSchema = Joi.object({
  backend: Joi.string()
    .valid('postgres', 'mongodb')
    .default('postgres')
    .description('Where Agenda stores jobs: the service database (postgres) or MongoDB (mongodb_url).'),
  // Interpolated into SQL identifiers and the trigger function name by the backend, hence the strict pattern.
  table_name: Joi.string()
    .pattern(/^[a-z_][a-z0-9_]{0,39}$/)
    .default('svc_scheduled_jobs')
    .description('Jobs table (postgres; `<name>_logs` is created beside it) or collection (mongodb); also the LISTEN/NOTIFY channel.'),
  mongodb_url: Joi.string()
    .uri({ scheme: ['mongodb', 'mongodb+srv'] })
    .when('backend', { is: 'mongodb', then: Joi.required(), otherwise: Joi.forbidden() })
    .description('MongoDB connection string; only with backend: mongodb.'),
  mongodb_connect_timeout_ms: Joi.number()
    .integer()
    .min(100)
    .default(10_000)
    .description('How long the start waits for MongoDB before it fails (mongodb only).'),
  process_every_ms: Joi.number().integer().min(50).default(1000).description('How often each replica polls for due jobs.'),
  default_concurrency: Joi.number().integer().min(1).default(5).description('Jobs of one name run at once per replica unless define() says otherwise.'),
  max_concurrency: Joi.number().integer().min(1).default(20).description('Jobs of all names run at once per replica.'),
  lock_lifetime_ms: Joi.number()
    .integer()
    .min(1000)
    .default(120_000)
    .description('A job whose replica stops touching it for this long is taken over by another replica (running jobs are touched automatically).'),
  stop_timeout_ms: Joi.number().integer().min(0).default(10_000).description('stop() waits this long for running jobs before closing connections.'),
});

/**
 * Agenda passes `attempt` = the job's failure count; failCount is only reset by a success, so for
 * a recurring job the count keeps growing across runs. Cycling makes each fresh failure of a later
 * run start the delay list again instead of never retrying.
 */
export function retryBackoff(delaysMs: number[]): BackoffStrategy | undefined {
  if (delaysMs.length === 0) return undefined;
  return ({ attempt }) => {
    const index = (attempt - 1) % (delaysMs.length + 1);
    return index < delaysMs.length ? delaysMs[index] : null;
  };
}

function handlerData(data: unknown): Record<string, unknown> {
  const { [KEY_FIELD]: _key, ...rest } = (data ?? {}) as Record<string, unknown>;
  return rest;
}

interface Storage {
  /** Backend handed to Agenda; already connected, so Agenda's own connect() is a no-op. */
  backend: AgendaBackend;
  /** Serialises a critical section across replicas (Agenda's unique upsert is read-then-write). */
  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * Agenda's constructor calls backend.connect() without handling a rejection (an unreachable database
 * would crash the process), and concurrent replicas racing on CREATE TABLE/FUNCTION can fail. So we
 * connect first, under an advisory lock, and give Agenda a facade whose connect() does nothing.
 */
function connectedFacade(inner: AgendaBackend, notificationChannel = inner.notificationChannel): AgendaBackend {
  return {
    name: inner.name,
    repository: inner.repository,
    notificationChannel,
    logger: inner.logger,
    ownsConnection: false,
    connect: async () => {},
    disconnect: async () => {},
  };
}

async function postgresStorage(options: Options, deps: AdapterDeps): Promise<Storage> {
  const pool = new pg.Pool({ connectionString: deps.databaseUrl, max: 5 });
  pool.on('error', (err) => deps.logger.warn({ err }, 'scheduler: idle database connection failed'));
  const exclusive = async <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    const lockKey = `${options.table_name}:${key}`;
    try {
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [lockKey]);
      try {
        return await fn();
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lockKey]);
      }
    } finally {
      client.release();
    }
  };
  const inner = new PostgresBackend({
    pool,
    tableName: options.table_name,
    channelName: options.table_name,
    logTableName: `${options.table_name}_logs`,
    disableNotifications: true, // ours instead, which survives a database restart
  });
  const channel = new ReconnectingNotificationChannel(pool, options.table_name, deps.logger);
  try {
    await exclusive('schema', () => inner.connect());
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  return {
    backend: connectedFacade(inner, channel),
    exclusive,
    close: async () => {
      await inner.disconnect();
      await pool.end();
    },
  };
}

class AgendaScheduler implements Scheduler {
  private readonly running = new Set<Job>();
  private stopping?: Promise<void>;

  constructor(
    private readonly agenda: Agenda,
    private readonly storage: Storage,
    private readonly options: Options,
    private readonly logger: Logger,
  ) {
    agenda.on('error', (err) => logger.error({ err }, 'scheduler: agenda error'));
    agenda.on('fail', (err: Error | string, job: { attrs?: { name?: string } }, remote?: boolean) => {
      if (!remote) logger.warn({ err, job: job.attrs?.name }, 'scheduler: job failed');
    });
    // 'complete' fires after Agenda has saved the job's final state, so stop() waits for that too.
    agenda.on('complete', (job: Job) => this.running.delete(job));
  }

  define(name: string, handler: ScheduledJobHandler, options: DefineOptions = {}): void {
    const lockLifetime = this.options.lock_lifetime_ms;
    const concurrency = options.concurrency ?? this.options.default_concurrency;
    this.agenda.define(
      name,
      async (job: Job) => {
        this.running.add(job);
        // Agenda abandons (and lets another replica restart) a job whose lock is not touched within its lifetime.
        let touching: Promise<void> = Promise.resolve();
        const keepAlive = setInterval(
          () => {
            touching = touching.then(() => job.touch()).catch((err) => this.logger.warn({ err, job: name }, 'scheduler: touch failed'));
          },
          Math.max(500, Math.floor(lockLifetime / 3)),
        );
        try {
          await handler(handlerData(job.attrs.data));
        } finally {
          clearInterval(keepAlive);
          await touching; // a touch landing after Agenda's final save would re-lock the job
        }
      },
      {
        concurrency,
        // Agenda otherwise locks every due job of the name at once, starving the other replicas.
        lockLimit: concurrency,
        lockLifetime,
        backoff: retryBackoff(options.retryDelaysMs ?? []),
      },
    );
  }

  async every(intervalMs: number, name: string, data: Record<string, unknown> = {}): Promise<void> {
    if (!Number.isInteger(intervalMs) || intervalMs <= 0) throw new Error(`every: interval must be a positive integer of ms, got ${intervalMs}`);
    // Agenda stores every() as a 'single' job: one row per name, upserted, so replicas share one schedule
    // and a replica restarting keeps the pending next run instead of resetting it.
    await this.agenda.every(intervalMs, name, data);
  }

  async cron(expression: string, name: string, data: Record<string, unknown> = {}, key: string = name): Promise<void> {
    const problem = cronProblem(expression);
    if (problem) throw new Error(`cron: ${problem}`);
    const job = this.agenda.create(name, { ...data, [KEY_FIELD]: key });
    job.repeatEvery(expression, { timezone: 'UTC' });
    // Agenda records an unparsable expression as a failure with no next run rather than throwing.
    if (!job.attrs.nextRunAt) throw new Error(`cron: '${expression}' is not a valid cron expression (${job.attrs.failReason ?? 'no next run'})`);
    job.unique({ [`data.${KEY_FIELD}`]: key });
    await this.storage.exclusive(`cron:${key}`, async () => {
      await this.agenda.cancel({ notNames: [name], data: { [KEY_FIELD]: key } });
      await job.save();
    });
  }

  async schedule(when: Date, name: string, data: Record<string, unknown> = {}): Promise<void> {
    if (Number.isNaN(when.getTime())) throw new Error('schedule: invalid date');
    await this.agenda.schedule(when, name, data);
  }

  async cancel(name: string, data?: Record<string, unknown>): Promise<number> {
    return this.agenda.cancel(data ? { name, data } : { name });
  }

  async start(): Promise<void> {
    await this.agenda.start();
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    // stop() (unlike drain()) also releases jobs this replica locked but had not started yet;
    // running jobs keep their lock, and we wait for them below before closing the pool.
    await this.agenda.stop(false);
    const deadline = Date.now() + this.options.stop_timeout_ms;
    while (this.running.size > 0 && Date.now() < deadline) await sleep(25);
    if (this.running.size > 0) {
      this.logger.warn(
        { running: [...this.running].map((j) => j.attrs.name) },
        'scheduler: stopping with jobs still running; another replica retakes them when their lock expires',
      );
    }
    await this.storage.close();
  }
}

export default defineAdapter<Scheduler, Options>({
  kind: 'scheduler',
  name: 'agenda',
  options: optionsSchema,
  async create(options, deps) {
    const storage =
      options.backend === 'mongodb'
        ? await mongoStorage(options.mongodb_url!, options.table_name, options.mongodb_connect_timeout_ms)
        : await postgresStorage(options, deps);
    const agenda = new Agenda({
      backend: storage.backend,
      // Recorded as last_modified_by on the rows this instance locks.
      name: `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
      processEvery: options.process_every_ms,
      defaultConcurrency: options.default_concurrency,
      maxConcurrency: options.max_concurrency,
      defaultLockLifetime: options.lock_lifetime_ms,
    });
    return new AgendaScheduler(agenda, storage, options, deps.logger);
  },
});
