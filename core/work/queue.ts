import type { Logger } from 'pino';
import type { Db } from '../db/knex.ts';
import { Notifier } from '../db/notify.ts';
import { afterCommit } from '../db/after-commit.ts';
import { LeaseLost } from '../errors.ts';
import { Passes } from '../passes.ts';
import type { RoleService } from '../roles.ts';
import { secondsSince } from '../metrics.ts';
import type { WorkRepository, Held, Settled, WorkItem } from './repository.ts';
import { DEFAULT_RETRY, retryDelayMs, type RetryPolicy } from './retry.ts';
import type { WorkMetrics, WorkOutcome } from './metrics.ts';

/** Why an item's signal was aborted: a cancel was asked for (the lease is still held: the item may record it). */
export class WorkCancelled extends Error {
  constructor(readonly key: string) {
    super(`work ${key} was cancelled`);
  }
}

/** Thrown by a run: the item goes to the dead letters at once, without retries (a failure no retry mends). */
export class WorkFailedForGood extends Error {}

/** What a queue's `run` gets for one attempt at one item. */
export interface WorkContext<P, H = undefined> {
  key: string;
  /** What the process that accepted the item gave `execute` (an awaiting caller's log echo); undefined when claimed. */
  here: H | undefined;
  payload: P;
  /** 1 on the first attempt; more after a retry or a reclaimed lease (the earlier owner may have done part of the work). */
  attempt: number;
  maxAttempts: number;
  /** Aborted when the lease is lost (reason LeaseLost: stop, write nothing) or a cancel is asked for (reason WorkCancelled). */
  signal: AbortSignal;
  /**
   * Call in the transaction holding the run's final writes: locks the item, throws LeaseLost when this
   * owner no longer holds it (the transaction rolls back: a stale owner's writes change nothing), and
   * ends the item (`done`, or `cancelled`) with that transaction.
   */
  fence(trx: Db, end?: 'done' | 'cancelled'): Promise<void>;
}

export interface QueueDefinition<P, H = undefined> {
  /** Lower-case letters, digits and `_`: the NOTIFY channel is `svc_work_<name>`. */
  name: string;
  run(ctx: WorkContext<P, H>): Promise<void>;
  /** Items one process runs at once (its claims stop while that many run). Default 4. */
  concurrency?: number;
  /** Items one claim takes at most. Default the concurrency. */
  batch?: number;
  /** How long a lease outlives its owner's last beat (beats come three times per lease). Default work.lease_seconds. */
  leaseMs?: number;
  /** The claimer's backstop poll. Default work.poll_ms. */
  pollMs?: number;
  /** Attempts before an item goes to the dead letters. Default 3. */
  maxAttempts?: number;
  retry?: RetryPolicy;
  /**
   * The item will not run again (its attempts are used up, a run threw WorkFailedForGood): the domain
   * records the end on its own rows, in the transaction that dead-letters the item.
   */
  dead?(key: string, payload: P, error: string, trx: Db): Promise<void>;
}

export interface QueueSettings {
  db: Db;
  databaseUrl: string;
  logger: Logger;
  metrics: WorkMetrics;
  /** This process's name on the leases it holds. */
  owner: string;
  leaseMs: number;
  pollMs: number;
  /** The engine's: one per kernel. */
  repo: WorkRepository;
}

const REAP_BATCH = 100;

/** How an item ends in a batched fence (`WorkEngine.fenceAll`): a retry goes back to the queue after `retryInMs`. */
export type WorkEnd = 'done' | 'cancelled' | { dead: string } | { retryInMs: number; error: string };

/** A running attempt's context, whatever its queue. */
export type AnyWorkContext = WorkContext<Record<string, unknown>, unknown>;

/** What `fenceAll` needs of a running attempt: its lease, and how to tell the attempt that its end is written. */
interface Fencing {
  held: Held;
  ended(outcome: WorkOutcome): void;
}
const fencings = new WeakMap<AnyWorkContext, Fencing>();

/**
 * The batched `ctx.fence`: in `trx`, which holds the final domain writes of many attempts (of any
 * queues), ends or requeues every item whose lease its attempt still holds, with one statement, and
 * locks them until `trx` ends. Returns the contexts still holding theirs: the domain writes for those
 * only (the others' items run elsewhere now). Their runs then return without another write.
 */
export async function fenceAll<C extends AnyWorkContext>(repo: WorkRepository, trx: Db, ends: { ctx: C; end: WorkEnd }[]): Promise<Set<C>> {
  const rows: (Settled & { ctx: C; outcome: WorkOutcome })[] = ends.map(({ ctx, end }) => {
    const f = fencings.get(ctx);
    if (!f) throw new Error(`work ${ctx.key}: fenceAll was given a context that is not running`);
    if (end === 'done' || end === 'cancelled') return { ctx, held: f.held, status: end, delayMs: 0, error: null, outcome: end };
    if ('dead' in end) return { ctx, held: f.held, status: 'dead', delayMs: 0, error: end.dead, outcome: 'dead' };
    return { ctx, held: f.held, status: 'queued', delayMs: end.retryInMs, error: end.error, outcome: 'retried' };
  });
  const held = await repo.settle(trx, rows);
  const still = new Set<C>();
  for (const r of rows) {
    if (!held.has(String(r.held.id))) continue;
    still.add(r.ctx);
    fencings.get(r.ctx)!.ended(r.outcome);
  }
  return still;
}

/**
 * One named queue of the work engine (docs/architecture.md, "Work engine"): its items are rows of
 * `work_items`, handed to `run` under a lease. `enqueue` queues one for any process's claimer;
 * `acceptHere` leases it to this process at once and `execute` runs it here (an awaited deploy);
 * either way a lease that runs out (its owner died) is reaped by any claimer and the item runs again
 * elsewhere. `service()` is the claimer and reaper a role runs.
 */
export class WorkQueue<P extends Record<string, unknown> = Record<string, unknown>, H = undefined> {
  readonly notifier: Notifier;
  private readonly repo: WorkRepository;
  /** The attempts running here, by lease token (a stale attempt and its item's next one may both be here). */
  private readonly running = new Map<string, { key: string; controller: AbortController; done: Promise<void> }>();
  private readonly concurrency: number;
  private readonly maxAttempts: number;
  private readonly s: QueueSettings;
  /** Wakes the claimer of `service()` while it runs. */
  private onFree: (() => void) | null = null;

  constructor(
    private readonly def: QueueDefinition<P, H>,
    settings: QueueSettings,
  ) {
    this.s = { ...settings, leaseMs: def.leaseMs ?? settings.leaseMs, pollMs: def.pollMs ?? settings.pollMs };
    if (!/^[a-z][a-z0-9_]*$/.test(def.name)) throw new Error(`work queue name ${def.name} must be lower-case letters, digits and _`);
    this.notifier = new Notifier(this.s.db, `svc_work_${def.name}`, this.s.logger);
    this.repo = settings.repo;
    this.concurrency = def.concurrency ?? 4;
    this.maxAttempts = def.maxAttempts ?? 3;
  }

  get name(): string {
    return this.def.name;
  }

  /** Queues `key` in `db`'s transaction, to be claimed from `runAt` (default now); claimers wake once it commits. */
  async enqueue(key: string, payload: P, db: Db, runAt?: Date): Promise<WorkItem> {
    const item = await this.repo.insert({ queue: this.name, key, payload, maxAttempts: this.maxAttempts, leaseMs: this.s.leaseMs, runAt }, db);
    this.notifier.afterCommit(db, this.name);
    return item;
  }

  /**
   * Queues several items in `db`'s transaction with one statement; those marked `here` are leased to
   * this process instead (`execute` them once it commits). Answers the items, in no set order.
   */
  async enqueueAll(entries: { key: string; payload: P; here?: boolean }[], db: Db): Promise<WorkItem[]> {
    const items = await this.repo.insertMany(
      this.name,
      entries.map((e) => ({
        key: e.key,
        payload: e.payload,
        maxAttempts: this.maxAttempts,
        leaseMs: this.s.leaseMs,
        owner: e.here ? this.s.owner : undefined,
      })),
      db,
    );
    if (entries.some((e) => !e.here)) this.notifier.afterCommit(db, this.name);
    return items;
  }

  /** Queues those of `keys` that never had an item (a domain's safety net for work it may have failed to queue); answers them. */
  async ensure(keys: string[], db: Db = this.s.db): Promise<string[]> {
    const queued = await this.repo.insertMissing(this.name, keys, this.maxAttempts, db);
    if (queued.length) this.notifier.afterCommit(db, this.name);
    return queued;
  }

  /** Records `key` leased to this process in `db`'s transaction: `execute` it once that commits. */
  acceptHere(key: string, payload: P, db: Db): Promise<WorkItem> {
    return this.repo.insert({ queue: this.name, key, payload, maxAttempts: this.maxAttempts, owner: this.s.owner, leaseMs: this.s.leaseMs }, db);
  }

  /**
   * Asks `key` to stop, in `db`'s transaction: a queued item ends cancelled, a running one has its
   * signal aborted (here at once after commit, elsewhere at its owner's next beat). Null when it has ended.
   */
  async cancel(key: string, db: Db): Promise<'cancelled' | 'requested' | null> {
    const outcome = await this.repo.cancel(this.name, key, db);
    if (outcome === 'requested')
      afterCommit(db, () => {
        for (const r of this.running.values()) if (r.key === key) r.controller.abort(new WorkCancelled(key));
      });
    return outcome;
  }

  item(key: string, db?: Db): Promise<WorkItem | undefined> {
    return this.repo.byKey(this.name, key, db);
  }

  /** Runs a leased item here, beating its lease, and ends it: done, retried with backoff, or dead. */
  execute(item: WorkItem, here?: H): Promise<void> {
    const controller = new AbortController();
    const token = item.lease_token!;
    const done = this.attempt(item, controller, here).finally(() => {
      this.running.delete(token);
      // Room freed: this process's claimer (when it runs one) takes more.
      this.onFree?.();
    });
    this.running.set(token, { key: item.key, controller, done });
    return done;
  }

  /** Items running in this process. */
  get inFlight(): number {
    return this.running.size;
  }

  /** How many more items this process would run now (its concurrency less those running). */
  get free(): number {
    return Math.max(0, this.concurrency - this.running.size);
  }

  /** Waits for the items running here (server stop). */
  async drain(): Promise<void> {
    await Promise.all([...this.running.values()].map((r) => r.done));
  }

  private async attempt(item: WorkItem, controller: AbortController, here: H | undefined): Promise<void> {
    const held: Held = { id: item.id, token: item.lease_token! };
    const { signal } = controller;
    const started = Date.now();
    let ended: WorkOutcome | null = null;
    const beat = setInterval(() => {
      void this.repo.heartbeat(held, this.s.leaseMs).then(
        (answer) => {
          if (!answer) controller.abort(new LeaseLost(`work ${this.name}/${item.key}: the lease was lost`));
          else if (answer.cancel && !signal.aborted) controller.abort(new WorkCancelled(item.key));
        },
        (err) => this.s.logger.warn({ err, queue: this.name, key: item.key }, 'work heartbeat failed; the lease holds until it expires'),
      );
    }, this.s.leaseMs / 3);
    const ctx: WorkContext<P, H> = {
      key: item.key,
      here,
      payload: item.payload as P,
      attempt: item.attempts,
      maxAttempts: item.max_attempts,
      signal,
      fence: async (trx, end = 'done') => {
        if (!(await this.repo.holds(held, trx))) throw new LeaseLost(`work ${this.name}/${item.key}: the lease was lost; another owner runs it`);
        await this.repo.end(held, end, null, trx);
        // A rollback after this throws out of `run` too, and the failure path finds the lease still held.
        ended = end;
      },
    };
    fencings.set(ctx as unknown as AnyWorkContext, { held, ended: (outcome) => (ended = outcome) });
    try {
      await this.def.run(ctx);
      const outcome = ended ?? (signal.reason instanceof WorkCancelled ? 'cancelled' : 'done');
      if (!ended && !(await this.repo.end(held, outcome as 'done' | 'cancelled', null))) throw this.lost(item);
      this.s.metrics.ended(this.name, outcome, secondsSince(started));
    } catch (err) {
      await this.failed(item, held, err, signal.reason, started);
    } finally {
      clearInterval(beat);
    }
  }

  private lost(item: WorkItem): LeaseLost {
    return new LeaseLost(`work ${this.name}/${item.key}: the lease was lost`);
  }

  private async failed(item: WorkItem, held: Held, err: unknown, reason: unknown, started: number): Promise<void> {
    const seconds = secondsSince(started);
    if (err instanceof LeaseLost || reason instanceof LeaseLost) {
      this.s.logger.warn({ queue: this.name, key: item.key }, 'work lease lost: another owner runs the item; this one wrote nothing more');
      this.s.metrics.ended(this.name, 'lease_lost', seconds);
      return;
    }
    const message = err instanceof Error ? err.message : String(err);
    if (reason instanceof WorkCancelled) {
      await this.repo.end(held, 'cancelled', message);
      this.s.metrics.ended(this.name, 'cancelled', seconds);
      return;
    }
    this.s.logger.warn({ err, queue: this.name, key: item.key, attempt: item.attempts }, 'work item failed');
    const outcome = await this.retryOrBury(item, held, message, err instanceof WorkFailedForGood, this.s.db).catch((e) => {
      this.s.logger.error({ err: e, queue: this.name, key: item.key }, 'work item could not be ended; its lease runs out and the reaper takes it');
      return 'lease_lost' as const;
    });
    this.s.metrics.ended(this.name, outcome, seconds);
  }

  /** Back to the queue with backoff while attempts remain, else to the dead letters with the domain's `dead`. */
  private async retryOrBury(item: WorkItem, held: Held, error: string, forGood: boolean, db: Db): Promise<'retried' | 'dead' | 'lease_lost'> {
    if (!forGood && item.attempts < item.max_attempts) {
      const delay = retryDelayMs(item.attempts, this.def.retry ?? DEFAULT_RETRY);
      return (await this.repo.requeue(held, delay, error, db)) ? 'retried' : 'lease_lost';
    }
    return db.transaction(async (trx) => {
      if (!(await this.repo.end(held, 'dead', error, trx))) return 'lease_lost';
      await this.def.dead?.(item.key, item.payload as P, error, trx);
      return 'dead';
    });
  }

  /** Frees the items whose owner stopped beating: each runs again after its backoff, or goes dead. */
  async reap(): Promise<number> {
    return this.s.db.transaction(async (trx) => {
      const expired = await this.repo.expired(this.name, REAP_BATCH, trx);
      for (const item of expired) {
        const error = `the owner ${item.lease_owner ?? '?'} stopped renewing its lease (attempt ${item.attempts})`;
        const outcome = await this.retryOrBury(item, { id: item.id, token: item.lease_token! }, error, false, trx);
        this.s.metrics.reaped(this.name, outcome);
      }
      return expired.length;
    });
  }

  /** Claims what this process has room for, in batches, and runs it here. */
  async claimAndRun(stopped: () => boolean): Promise<void> {
    while (!stopped()) {
      const room = this.concurrency - this.running.size;
      if (room <= 0) return;
      const items = await this.repo.claim(this.name, this.s.owner, Math.min(room, this.def.batch ?? this.concurrency), this.s.leaseMs);
      for (const item of items) {
        this.s.metrics.claimed(this.name, secondsSince(item.run_at));
        void this.execute(item).catch((err) => this.s.logger.error({ err, queue: this.name, key: item.key }, 'work item failed unexpectedly'));
      }
      if (items.length < room) return;
    }
  }

  /** The claimer and reaper of this queue, for the role that runs it: wakes on NOTIFY, polls every poll_ms, reaps every beat. */
  service(): RoleService {
    let stopped = false;
    let reaped = 0;
    // Reaps at most a third of a lease apart: a busy queue's passes (one per finished batch) would otherwise each reap.
    const reapEvery = Math.min(this.s.pollMs, this.s.leaseMs / 3);
    const passes: Passes = new Passes(
      async () => {
        if (Date.now() - reaped >= reapEvery) {
          reaped = Date.now();
          await this.reap();
        }
        await this.claimAndRun(() => stopped);
      },
      (err) => this.s.logger.error({ err, queue: this.name }, 'work pass failed'),
    );
    return {
      name: `work:${this.name}`,
      start: async () => {
        this.onFree = () => passes.wake();
        await passes.wakeOn(this.notifier, this.s.databaseUrl, this.s.logger);
        passes.every(reapEvery);
        passes.wake();
      },
      stop: async () => {
        stopped = true;
        this.onFree = null;
        await passes.stop();
        await this.drain();
      },
    };
  }
}
