import type { Logger } from 'pino';
import { Passes } from '../../core/passes.ts';
import { inject, injectable, type InjectionToken } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { RoleService } from '../../core/roles.ts';
import type { Notifier } from '../../core/db/notify.ts';
import type { StoredManifest } from '../../domain/manifest/types.ts';
import { EventRepository, type EventRow } from './repository.ts';
import { EventRouting } from './routing.ts';
import { Metrics, secondsSince } from '../../core/metrics.ts';

export interface RouterOptions {
  /** The backstop when a notice is missed. */
  pollEveryMs: number;
  /** How often stuck events are looked for, and how long a claim may last before the event counts as stuck. */
  recoverEveryMs: number;
  staleSeconds: number;
  /** Claims before a stuck event is failed instead of requeued. */
  maxAttempts: number;
  batch: number;
  /** Events of a batch routed at once. */
  lanes: number;
}

/** The notifier new events wake the router through (core/events/wakeups.ts attaches it to the database). */
export const EventWakeups = Symbol('EventWakeups') as InjectionToken<Notifier>;

export const ROUTER_DEFAULTS: RouterOptions = { pollEveryMs: 1_000, recoverEveryMs: 30_000, staleSeconds: 300, maxAttempts: 3, batch: 32, lanes: 8 };

/**
 * The orchestrator's event router: woken by NOTIFY on svc_events (directly when the event was
 * emitted in this process) and by a poll, it claims pending events in batches (SKIP LOCKED, so
 * any number of routers share the work) and routes them several at a time: events are not
 * ordered (several routers could not keep an order anyway). Events stuck in processing are
 * requeued (or failed after maxAttempts).
 */
@injectable()
export class EventRouter implements RoleService {
  readonly name = 'event-router';
  private stopped = false;
  private readonly passes = new Passes(
    () => this.pass(),
    (err) => this.logger.error({ err }, 'event routing pass failed'),
  );

  constructor(
    @inject(EventRepository) private readonly events: EventRepository,
    @inject(EventRouting) private readonly routing: EventRouting,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(Tokens.DatabaseUrl) private readonly databaseUrl: string,
    @inject(EventWakeups) private readonly wakeups: Notifier,
    @inject(Metrics) metrics: Metrics,
    private readonly options: RouterOptions = ROUTER_DEFAULTS,
  ) {
    this.lag = metrics.histogram('svc_event_routing_lag_seconds', 'From an event being stored to its routing recorded, by outcome', ['status']);
  }

  private readonly lag;

  async start(): Promise<void> {
    await this.passes.wakeOn(this.wakeups, this.databaseUrl, this.logger);
    this.passes.every(this.options.pollEveryMs);
    this.passes.every(this.options.recoverEveryMs, () => void this.recover());
    this.passes.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.passes.stop();
  }

  /** Requeues (or fails) events stuck in processing; returns what it did. */
  async recover(): Promise<{ requeued: number; failed: number }> {
    try {
      const done = await this.events.recoverStuck(this.options.staleSeconds, this.options.maxAttempts);
      if (done.requeued || done.failed) this.logger.warn(done, 'stuck events recovered');
      if (done.requeued) this.passes.wake();
      return done;
    } catch (err) {
      this.logger.error({ err }, 'stuck event recovery failed');
      return { requeued: 0, failed: 0 };
    }
  }

  private async pass(): Promise<void> {
    while (!this.stopped) {
      const batch = await this.events.claim(this.options.batch);
      // One manifest read per project and batch, shared by its events.
      const manifests = new Map<string, Promise<StoredManifest | null>>();
      const manifestOf = (projectId: string) => {
        if (!manifests.has(projectId)) manifests.set(projectId, this.routing.manifestOf(projectId));
        return manifests.get(projectId)!;
      };
      let next = 0;
      const lane = async () => {
        while (next < batch.length) await this.routeOne(batch[next++], manifestOf);
      };
      await Promise.all(Array.from({ length: Math.min(this.options.lanes, batch.length) }, lane));
      if (batch.length < this.options.batch) return;
    }
  }

  private async routeOne(event: EventRow, manifestOf: (projectId: string) => Promise<StoredManifest | null>): Promise<void> {
    try {
      const outcome = await this.routing.route(event, await manifestOf(event.project_id));
      if (!(await this.events.finish(event, outcome.status, outcome.routing, outcome.error))) {
        this.logger.warn({ eventId: event.id }, 'event claim lost before routing finished; its outcome was not recorded');
      } else this.lag.observe({ status: outcome.status }, secondsSince(event.created_at));
    } catch (err) {
      this.logger.error({ err, eventId: event.id }, 'event routing failed');
      await this.events.finish(event, 'failed', null, `routing failed: ${(err as Error).message}`).catch(() => undefined);
    }
  }
}
