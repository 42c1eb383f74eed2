import type { Logger } from 'pino';
import { Passes } from '../../core/passes.ts';
import { inject, injectable } from '../../core/di.ts';
import type { Db } from '../../core/db/knex.ts';
import { eventWakeupsOf } from '../../core/events/wakeups.ts';
import { newId } from '../../core/ids.ts';
import type { RoleService } from '../../core/roles.ts';
import type { Config } from '../../core/config/schema.ts';
import { Tokens } from '../../core/tokens.ts';
import { DeliveryRepository, type ClaimedDelivery, type NewDelivery } from './deliveries.ts';
import { OrgEvents } from './org-events.ts';
import { subscriptionMatches } from './matching.ts';
import { SubscriptionRepository } from './repository.ts';
import { DeliverySender } from './sender.ts';
import { WebhookWakeups } from './wakeups.ts';

/** Events taken off the outbox, and deliveries claimed, per statement. */
const BATCH = 200;
/** A lease outlives the attempt's timeout by this much before another dispatcher may retake it. */
const LEASE_MARGIN_MS = 60_000;
/** A retry this late was never scheduled (a crash between recording and scheduling it). */
const OVERDUE_GRACE_MS = 5 * 60_000;
const OVERDUE_EVERY_MS = 30_000;

/**
 * The orchestrator's webhook loop. Woken by new events (NOTIFY svc_events), by replays and due
 * retries (svc_webhooks, or directly in this process), and by a poll backstop, it fans events out
 * of the outbox into deliveries and sends them, then claims any other pending deliveries. All
 * claims are SKIP LOCKED with a lease, so any number of orchestrators share the work and a
 * delivery is sent by one of them at a time.
 */
@injectable()
export class WebhookDispatcher implements RoleService {
  readonly name = 'webhook-dispatcher';
  private readonly maxInFlight: number;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly inFlight = new Set<Promise<void>>();
  /** The last pass stopped for want of room: the next send to finish wakes the loop. */
  private starved = false;
  private stopped = false;
  private readonly passes = new Passes(
    () => this.pass(),
    (err) => this.logger.error({ err }, 'webhook dispatch pass failed'),
  );

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.DatabaseUrl) private readonly databaseUrl: string,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(DeliveryRepository) private readonly deliveries: DeliveryRepository,
    @inject(SubscriptionRepository) private readonly subscriptions: SubscriptionRepository,
    @inject(OrgEvents) private readonly events: OrgEvents,
    @inject(WebhookWakeups) private readonly wakeups: WebhookWakeups,
    @inject(DeliverySender) readonly sender: DeliverySender,
    @inject(Tokens.Config) { webhooks }: Config,
  ) {
    this.maxInFlight = webhooks.max_in_flight;
    this.leaseMs = webhooks.timeout_ms + LEASE_MARGIN_MS;
    this.pollMs = webhooks.poll_ms;
  }

  /** Woken by new events (the plugin attaches the events notifier when no router did), by replays and retries, and by a poll. */
  async start(): Promise<void> {
    const events = eventWakeupsOf(this.db);
    for (const notifier of [this.wakeups, ...(events ? [events] : [])]) await this.passes.wakeOn(notifier, this.databaseUrl, this.logger);
    this.passes.every(this.pollMs);
    this.passes.every(OVERDUE_EVERY_MS, () => void this.sweepOverdue());
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.passes.stop();
    await Promise.all(this.inFlight);
  }

  /** Runs a pass now, or right after the one in progress. */
  wake(): void {
    this.passes.wake();
  }

  private room(): number {
    return this.maxInFlight - this.inFlight.size;
  }

  private async pass(): Promise<void> {
    while (!this.stopped && this.room() > 0) {
      if ((await this.fanOut()) < BATCH) break;
    }
    while (!this.stopped && this.room() > 0) {
      const limit = Math.min(this.room(), BATCH);
      const claimed = await this.deliveries.claim(limit, this.leaseMs);
      const events = new Map((await this.events.delivered(claimed.map((d) => d.event_id))).map((e) => [e.id, e]));
      for (const { event_id, ...d } of claimed) this.launch({ ...d, event: events.get(event_id) ?? null });
      if (claimed.length < limit) break;
    }
    this.starved = this.room() <= 0;
  }

  /**
   * Takes a batch of events off the outbox and writes a delivery for each enabled subscription
   * that matches, in one transaction; those that fit in this process's room are leased to it and
   * sent at once, the rest wait for any dispatcher's claim. Returns the number of events taken.
   */
  private async fanOut(): Promise<number> {
    let room = this.room();
    const { taken, send } = await this.db.transaction(async (trx) => {
      const events = await this.events.delivered(await this.deliveries.takeOutbox(trx, BATCH), trx);
      if (events.length === 0) return { taken: 0, send: [] as ClaimedDelivery[] };
      const subs = await this.subscriptions.enabledIn([...new Set(events.map((e) => e.org_id))], trx);
      const rows: NewDelivery[] = [];
      const claimed = new Map<string, ClaimedDelivery>();
      for (const event of events) {
        for (const sub of subs) {
          if (sub.org_id !== event.org_id || !subscriptionMatches(sub, { ...event, payload: event.data })) continue;
          const row: NewDelivery = {
            id: newId('whd'),
            subscription_id: sub.id,
            event_id: event.id,
            event_type: event.type,
            kind: 'event',
            replay_id: null,
            leased: room-- > 0,
          };
          rows.push(row);
          if (row.leased) {
            claimed.set(row.id, {
              id: row.id,
              kind: 'event',
              replay_id: null,
              attempts: 0,
              subscription: { id: sub.id, url: sub.url, secret_enc: sub.secret_enc, live: true },
              event,
            });
          }
        }
      }
      const written = await this.deliveries.insert(trx, rows, this.leaseMs);
      return { taken: events.length, send: [...claimed.values()].filter((d) => written.has(d.id)) };
    });
    for (const d of send) this.launch(d);
    return taken;
  }

  private launch(d: ClaimedDelivery): void {
    const sending: Promise<void> = this.sender
      .deliver(d)
      .catch((err) => this.logger.error({ err, delivery: d.id }, 'webhook delivery failed to record; its lease will expire and it is sent again'))
      .finally(() => {
        this.inFlight.delete(sending);
        if (this.starved) {
          this.starved = false;
          this.wake();
        }
      });
    this.inFlight.add(sending);
  }

  private async sweepOverdue(): Promise<void> {
    if (this.stopped) return;
    try {
      if ((await this.deliveries.overdue(OVERDUE_GRACE_MS)) > 0) this.wake();
    } catch (err) {
      this.logger.warn({ err }, 'webhook overdue sweep failed');
    }
  }
}
