import type { Logger } from 'pino';
import { Batcher } from '../../core/batcher.ts';
import { inject, injectable, type InjectionToken } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { RoleService } from '../../core/roles.ts';
import type { Notifier } from '../../core/db/notify.ts';
import { WorkEngine } from '../../core/work/engine.ts';
import type { WorkContext, WorkQueue } from '../../core/work/queue.ts';
import type { StoredManifest } from '../../domain/manifest/types.ts';
import { EventRepository, type EventRow, type RoutingEnd } from './repository.ts';
import { EventRouting } from './routing.ts';
import { Metrics, secondsSince } from '../../core/metrics.ts';

/** The notifier new events wake their other readers through (core/events/wakeups.ts attaches it to the database). */
export const EventWakeups = Symbol('EventWakeups') as InjectionToken<Notifier>;

/** An event's routing work item (queue `events`): the event id is its key. */
export type RouteWork = Record<string, never>;

/** Events one router routes at once; a claim takes up to as many. */
const CONCURRENCY = 32;
/** Claims of one event before it fails (its router died or hung each time). */
export const MAX_ROUTING_ATTEMPTS = 3;
/** The claimer's backstop poll (a lost notice). */
const POLL_MS = 1_000;
/** How often, and after how long, pending events without a work item are queued (one emitted through a pool nobody attached). */
const SWEEP_EVERY_MS = 60_000;
const SWEEP_AFTER_SECONDS = 60;

type Claimed = { event: EventRow; manifest: StoredManifest | null };
type Routed = RoutingEnd & { ctx: WorkContext<RouteWork>; event: EventRow };

/**
 * The orchestrator's event router, on the work engine (core/work, queue `events`): `emitEvent`
 * queues a work item with each event, in the transaction that stores it; any orchestrator claims
 * them in batches (SKIP LOCKED, NOTIFY svc_work_events) and routes up to CONCURRENCY at once, the
 * events claimed together read together (one manifest read per project and batch), their outcomes
 * written together behind their leases (`WorkEngine.fenceAll`). Events are not ordered (several
 * routers could not keep an order anyway). A router that dies mid-way loses its leases within
 * `work.lease_seconds`; another routes those events again (at least once: a match it had started
 * starts again), and an event claimed MAX_ROUTING_ATTEMPTS times fails.
 */
@injectable()
export class EventRouter implements RoleService {
  readonly name = 'event-router';
  readonly queue: WorkQueue<RouteWork>;
  private service: RoleService | null = null;
  private sweeper: NodeJS.Timeout | null = null;
  private readonly loader = new Batcher<string, Claimed | null>((ids) => this.load(ids), { maxBatch: CONCURRENCY, concurrency: 2 });
  private readonly recorder = new Batcher<Routed, void>((items) => this.record(items), { maxBatch: 256, concurrency: 2 });
  private readonly lag;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(WorkEngine) private readonly engine: WorkEngine,
    @inject(EventRepository) private readonly events: EventRepository,
    @inject(EventRouting) private readonly routing: EventRouting,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(Metrics) metrics: Metrics,
  ) {
    this.lag = metrics.histogram('svc_event_routing_lag_seconds', 'From an event being stored to its routing recorded, by outcome', ['status']);
    this.queue = engine.define<RouteWork>({
      name: 'events',
      concurrency: CONCURRENCY,
      maxAttempts: MAX_ROUTING_ATTEMPTS,
      pollMs: POLL_MS,
      retry: { initialMs: 500, factor: 2, maxMs: 30_000 },
      run: (ctx) => this.route(ctx),
      dead: (id, _work, error, trx) =>
        this.events.finish(trx, [{ id, status: 'failed', routing: null, error: `routing did not finish after ${MAX_ROUTING_ATTEMPTS} claims (${error})` }]),
    });
  }

  /** Queues a stored event for routing, in the transaction that stored it. */
  enqueue(eventId: string, trx: Db): Promise<unknown> {
    return this.queue.enqueue(eventId, {}, trx);
  }

  async start(): Promise<void> {
    this.service = this.queue.service();
    await this.service.start();
    this.sweeper = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
  }

  async stop(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await this.service?.stop();
  }

  /** Queues the pending events that never got their work item; answers how many. */
  async sweep(): Promise<number> {
    try {
      const queued = await this.queue.ensure(await this.events.pendingSince(SWEEP_AFTER_SECONDS, 500));
      if (queued.length) this.logger.warn({ events: queued.length }, 'pending events without a routing work item were queued');
      return queued.length;
    } catch (err) {
      this.logger.error({ err }, 'the pending events sweep failed');
      return 0;
    }
  }

  private async route(ctx: WorkContext<RouteWork>): Promise<void> {
    const claimed = await this.loader.submit(ctx.key);
    // Routed already (an earlier owner recorded it just as its lease ran out), or gone with its project.
    if (!claimed) return;
    const { event, manifest } = claimed;
    let end: RoutingEnd;
    try {
      end = { id: event.id, ...(await this.routing.route(event, manifest)) };
    } catch (err) {
      this.logger.error({ err, eventId: event.id }, 'event routing failed');
      end = { id: event.id, status: 'failed', routing: null, error: `routing failed: ${(err as Error).message}` };
    }
    await this.recorder.submit({ ...end, ctx, event });
  }

  /** The events claimed together, with their projects' manifests read once each. */
  private async load(ids: string[]): Promise<(Claimed | null)[]> {
    const events = new Map((await this.events.pending(ids)).map((e) => [e.id, e]));
    const projects = [...new Set([...events.values()].map((e) => e.project_id))];
    const manifests = new Map(await Promise.all(projects.map(async (p) => [p, await this.routing.manifestOf(p)] as const)));
    return ids.map((id) => {
      const event = events.get(id);
      return event ? { event, manifest: manifests.get(event.project_id) ?? null } : null;
    });
  }

  private async record(routed: Routed[]): Promise<void[]> {
    const mine = await this.db.transaction(async (trx) => {
      const held = await this.engine.fenceAll(
        trx,
        routed.map((r) => ({ ctx: r.ctx, end: 'done' as const })),
      );
      const mine = routed.filter((r) => held.has(r.ctx));
      await this.events.finish(
        trx,
        mine.map(({ id, status, routing, error }) => ({ id, status, routing, error })),
      );
      return mine;
    });
    for (const r of mine) this.lag.observe({ status: r.status }, secondsSince(r.event.created_at));
    if (mine.length < routed.length)
      this.logger.warn({ lost: routed.length - mine.length }, 'event claims lost before routing finished; their outcomes were not recorded');
    return routed.map(() => undefined);
  }
}
