import type { Logger } from 'pino';
import { Batcher } from '../../core/batcher.ts';
import { Passes } from '../../core/passes.ts';
import { inject, injectable } from '../../core/di.ts';
import type { Db } from '../../core/db/knex.ts';
import { eventWakeupsOf } from '../../core/events/wakeups.ts';
import { newId } from '../../core/ids.ts';
import type { RoleService } from '../../core/roles.ts';
import type { Config } from '../../core/config/schema.ts';
import { Tokens } from '../../core/tokens.ts';
import { WorkEngine } from '../../core/work/engine.ts';
import type { WorkContext, WorkQueue } from '../../core/work/queue.ts';
import type { WorkItem } from '../../core/work/repository.ts';
import { DeliveryRepository, appLinkKey, type ClaimedDelivery, type NewDelivery } from './deliveries.ts';
import { OrgEvents } from './org-events.ts';
import { subscriptionMatches } from './matching.ts';
import { SubscriptionRepository } from './repository.ts';
import { DeliverySender, type DeliveryWork } from './sender.ts';

/** Events taken off the outbox, and deliveries claimed, per statement. */
const BATCH = 200;
/** Leases a delivery may lose (its orchestrator died while sending) beside its own attempts, before it is given up. */
const LOST_LEASES = 3;

/**
 * The orchestrator's webhook loop, on the work engine (core/work, queue `webhooks`). Woken by new
 * events (NOTIFY svc_events) and by a poll, it fans events out of the outbox into deliveries, each
 * with its work item, in one transaction: those that fit in this process's room are leased to it
 * and sent at once, the rest are queued for any orchestrator's claimer. Replays queue theirs the
 * same way; a failed attempt goes back to the queue until its retry is due (the spec's schedule,
 * `webhooks.retry_delays_ms`). A delivery whose orchestrator died mid-way is reaped and sent again
 * by another (at most one duplicate per lost lease; receivers dedupe on `webhook-id`).
 */
@injectable()
export class WebhookDispatcher implements RoleService {
  readonly name = 'webhook-dispatcher';
  readonly queue: WorkQueue<DeliveryWork, ClaimedDelivery>;
  private readonly pollMs: number;
  private stopped = false;
  private service: RoleService | null = null;
  /** Deliveries claimed together are read together. */
  private readonly loader = new Batcher<string, ClaimedDelivery | null>((ids) => this.load(ids), { maxBatch: BATCH, concurrency: 2 });
  private readonly passes = new Passes(
    () => this.pass(),
    (err) => this.logger.error({ err }, 'webhook fan-out pass failed'),
  );

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.DatabaseUrl) private readonly databaseUrl: string,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(WorkEngine) engine: WorkEngine,
    @inject(DeliveryRepository) private readonly deliveries: DeliveryRepository,
    @inject(SubscriptionRepository) private readonly subscriptions: SubscriptionRepository,
    @inject(OrgEvents) private readonly events: OrgEvents,
    @inject(DeliverySender) private readonly sender: DeliverySender,
    @inject(Tokens.Config) { webhooks }: Config,
  ) {
    this.pollMs = webhooks.poll_ms;
    this.queue = engine.define<DeliveryWork, ClaimedDelivery>({
      name: 'webhooks',
      concurrency: webhooks.max_in_flight,
      batch: BATCH,
      pollMs: webhooks.poll_ms,
      maxAttempts: webhooks.retry_delays_ms.length + 1 + LOST_LEASES,
      // A lost lease or a failed record is tried again soon; the receiver's failures follow the spec's schedule (the sender's).
      retry: { initialMs: 1_000, factor: 2, maxMs: 60_000 },
      run: (ctx) => this.send(ctx),
      dead: (id, _work, error, trx) => this.sender.abandon(id, error, trx),
    });
  }

  async start(): Promise<void> {
    this.service = this.queue.service();
    await this.service.start();
    const events = eventWakeupsOf(this.db);
    if (events) await this.passes.wakeOn(events, this.databaseUrl, this.logger);
    this.passes.every(this.pollMs);
    this.passes.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.passes.stop();
    await this.service?.stop();
  }

  /** Queues deliveries written in `trx` (a replay's) for any orchestrator's claimer. */
  enqueue(ids: string[], trx: Db): Promise<WorkItem[]> {
    return this.queue.enqueueAll(
      ids.map((key) => ({ key, payload: {} })),
      trx,
    );
  }

  private async send(ctx: WorkContext<DeliveryWork, ClaimedDelivery>): Promise<void> {
    const delivery = ctx.here ?? (await this.loader.submit(ctx.key));
    // Ended already: recorded by an earlier owner just as its lease ran out, or closed meanwhile.
    if (delivery) await this.sender.deliver(delivery, ctx);
  }

  private async load(ids: string[]): Promise<(ClaimedDelivery | null)[]> {
    const found = await this.deliveries.toSend(ids);
    const events = new Map((await this.events.delivered(found.map((d) => d.event_id))).map((e) => [e.id, e]));
    const byId = new Map(found.map(({ event_id, ...d }) => [d.id, { ...d, event: events.get(event_id) ?? null }]));
    return ids.map((id) => byId.get(id) ?? null);
  }

  private async pass(): Promise<void> {
    while (!this.stopped) {
      if ((await this.fanOut()) < BATCH) return;
    }
  }

  /**
   * Takes a batch of events off the outbox and writes a delivery and its work item for each enabled
   * subscription that matches, in one transaction; those that fit in this process's room are leased
   * to it and sent once that commits. Returns the number of events taken.
   */
  private async fanOut(): Promise<number> {
    const { taken, here } = await this.db.transaction(async (trx) => {
      const events = await this.events.delivered(await this.deliveries.takeOutbox(trx, BATCH), trx);
      if (events.length === 0) return { taken: 0, here: [] };
      const subs = await this.subscriptions.enabledIn([...new Set(events.map((e) => e.org_id))], trx);
      const rows: NewDelivery[] = [];
      const claimed = new Map<string, ClaimedDelivery>();
      for (const event of events) {
        for (const sub of subs) {
          if (sub.org_id !== event.org_id || !subscriptionMatches(sub, { ...event, payload: event.data })) continue;
          const id = newId('whd');
          rows.push({
            id,
            subscription_id: sub.id,
            event_id: event.id,
            event_type: event.type,
            kind: 'event',
            replay_id: null,
            dedupe_key: appLinkKey(sub.id, event.id),
          });
          const subscription = { id: sub.id, url: sub.url, secret_enc: sub.secret_enc, live: true };
          claimed.set(id, { id, kind: 'event', replay_id: null, attempts: 0, subscription, event });
        }
      }
      const written = await this.deliveries.insert(trx, rows);
      let room = this.queue.free;
      const items = await this.queue.enqueueAll(
        rows.filter((r) => written.has(r.id)).map((r) => ({ key: r.id, payload: {}, here: room-- > 0 })),
        trx,
      );
      return { taken: events.length, here: items.filter((i) => i.status === 'running').map((i) => ({ item: i, delivery: claimed.get(i.key)! })) };
    });
    for (const { item, delivery } of here) {
      void this.queue.execute(item, delivery).catch((err) => this.logger.error({ err, delivery: item.key }, 'webhook delivery failed unexpectedly'));
    }
    return taken;
  }
}
