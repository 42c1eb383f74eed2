import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Db } from '../db/knex.ts';
import type { Metrics } from '../metrics.ts';
import { WorkRepository } from './repository.ts';
import { WorkMetrics } from './metrics.ts';
import { WorkQueue, fenceAll, type QueueDefinition, type AnyWorkContext, type WorkEnd } from './queue.ts';

export interface WorkEngineOptions {
  db: Db;
  databaseUrl: string;
  logger: Logger;
  metrics: Metrics;
  /** work.lease_seconds: how long a lease outlives its owner's last beat (beats come three times per lease). */
  leaseMs: number;
  /** work.poll_ms: the claimers' backstop poll for a lost notice and for retries coming due. */
  pollMs: number;
}

/**
 * The durable work engine (docs/architecture.md, "Work engine"): one set of queues on PostgreSQL for
 * the background work of every domain. A domain defines its queue when its plugin registers, queues
 * items in its own transactions, and adds the queue's service (claimer and reaper) to the role that
 * should run it. One per kernel.
 */
export class WorkEngine {
  /** This process's name on the leases it holds. */
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly queues = new Map<string, WorkQueue<never, never>>();
  private readonly metrics: WorkMetrics;
  readonly repo: WorkRepository;

  constructor(private readonly o: WorkEngineOptions) {
    this.repo = new WorkRepository(o.db);
    this.metrics = new WorkMetrics(o.metrics, this.repo);
  }

  define<P extends Record<string, unknown>, H = undefined>(def: QueueDefinition<P, H>): WorkQueue<P, H> {
    if (this.queues.has(def.name)) throw new Error(`work queue ${def.name} is defined twice`);
    const queue = new WorkQueue<P, H>(def, { ...this.o, metrics: this.metrics, owner: this.owner, repo: this.repo });
    this.queues.set(def.name, queue as unknown as WorkQueue<never, never>);
    return queue;
  }

  /** The batched `ctx.fence` of many attempts in one transaction (queue.ts, `fenceAll`): the contexts still holding their lease. */
  fenceAll<C extends AnyWorkContext>(trx: Db, ends: { ctx: C; end: WorkEnd }[]): Promise<Set<C>> {
    return fenceAll(this.repo, trx, ends);
  }

  /** Removes ended items older than `before`, dead letters older than `deadBefore` (housekeeping). */
  prune(before: Date, deadBefore: Date): Promise<number> {
    return this.repo.prune(before, deadBefore);
  }
}
