import type { Logger } from 'pino';
import { Batcher } from '../../core/batcher.ts';
import { inject, injectable } from '../../core/di.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Sealer } from '../../core/crypto/sealer.ts';
import type { Config } from '../../core/config/schema.ts';
import { Tokens } from '../../core/tokens.ts';
import { WorkEngine } from '../../core/work/engine.ts';
import type { WorkContext, WorkEnd } from '../../core/work/queue.ts';
import { DeliveryRepository, type AttemptResult, type ClaimedDelivery } from './deliveries.ts';
import { deliveryHeaders, envelope } from './envelope.ts';
import { ReplayRepository } from './replay-repository.ts';
import { SubscriptionRepository, secretContext } from './repository.ts';
import { Transport } from '../../core/http/guarded-post.ts';
import { Metrics } from '../../core/metrics.ts';

/** A delivery's work item (queue `webhooks`): the delivery id is its key. */
export type DeliveryWork = Record<string, never>;

/** An attempt's result and the work context that made it (its lease fences the write). */
type Attempted = AttemptResult & { ctx: WorkContext<DeliveryWork, ClaimedDelivery> };

/**
 * Sends leased deliveries and records what happened. Results are written in batches (one
 * transaction for many attempts), behind their work items' leases (`WorkEngine.fenceAll`: a sender
 * that lost its lease records nothing): the delivery rows, the subscriptions' failure counts (auto-
 * disable), finished replays; a failed attempt's item goes back to the queue until its retry is due.
 */
@injectable()
export class DeliverySender {
  private readonly retryDelays: number[];
  private readonly disableAfter: number;
  private readonly recorder = new Batcher<Attempted, void>((items) => this.record(items), { maxBatch: 256, concurrency: 2 });
  private readonly outcomes;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Sealer) private readonly sealer: Sealer,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(Transport) private readonly transport: Transport,
    @inject(DeliveryRepository) private readonly deliveries: DeliveryRepository,
    @inject(SubscriptionRepository) private readonly subscriptions: SubscriptionRepository,
    @inject(ReplayRepository) private readonly replays: ReplayRepository,
    @inject(WorkEngine) private readonly engine: WorkEngine,
    @inject(Tokens.Config) { webhooks }: Config,
    @inject(Metrics) metrics: Metrics,
  ) {
    this.outcomes = metrics.counter(
      'svc_webhook_deliveries_total',
      'Webhook delivery attempts by outcome: delivered, retrying (failed, another attempt is scheduled), failed (no attempt left), skipped',
      ['outcome'],
    );
    this.retryDelays = webhooks.retry_delays_ms;
    this.disableAfter = webhooks.disable_after_failures;
  }

  /** One attempt of a leased delivery; resolves once its result is recorded (or found fenced off). */
  async deliver(d: ClaimedDelivery, ctx: WorkContext<DeliveryWork, ClaimedDelivery>): Promise<void> {
    await this.recorder.submit({ ...(await this.attempt(d)), ctx });
  }

  /** Every lease of the delivery was lost (its orchestrators died sending it): it ends failed, in the dead-lettering `trx`. */
  async abandon(id: string, error: string, trx: Db): Promise<void> {
    const ended = await this.deliveries.abandon(trx, id, `not recorded: the orchestrators sending it stopped each time (${error})`);
    if (ended?.replay_id) await this.replays.settle(trx, [ended.replay_id]);
  }

  private async attempt(d: ClaimedDelivery): Promise<AttemptResult> {
    if (!d.subscription.live) return skipped(d, 'not sent: the subscription is disabled or deleted');
    if (!d.event) return skipped(d, 'not sent: the event no longer exists');
    const body = envelope(d.event);
    const secret = this.sealer.open(d.subscription.secret_enc, secretContext(d.subscription.id));
    const outcome = await this.transport.post(
      d.subscription.url,
      body,
      deliveryHeaders({ deliveryId: d.id, messageId: d.event.id, body, secret, sentAt: new Date() }),
    );
    // attempts counts earlier attempts, so it indexes the delay before the next one.
    const retryInMs = outcome.ok ? null : (this.retryDelays[d.attempts] ?? null);
    return { delivery: d, outcome, skipped: false, retryInMs };
  }

  private async record(attempted: Attempted[]): Promise<void[]> {
    const { items, disabled } = await this.db.transaction(async (trx) => {
      const held = await this.engine.fenceAll(
        trx,
        attempted.map((r) => ({ ctx: r.ctx, end: workEnd(r) })),
      );
      const items = attempted.filter((r) => held.has(r.ctx));
      await this.deliveries.record(trx, items);
      const disabled = await this.subscriptions.countOutcomes(trx, failureCounts(items), this.disableAfter);
      const finishedReplays = new Set(items.filter((r) => r.delivery.replay_id !== null && r.retryInMs === null).map((r) => r.delivery.replay_id!));
      await this.replays.settle(trx, [...finishedReplays]);
      return { items, disabled };
    });
    for (const r of items) this.outcomes.inc({ outcome: outcomeOf(r) });
    if (disabled.length) this.logger.warn({ webhooks: disabled, after: this.disableAfter }, 'webhooks disabled after consecutive failed deliveries');
    return attempted.map(() => undefined);
  }
}

/** What becomes of the delivery's work item: done when sent or not to be sent, back to the queue for a retry, else dead. */
function workEnd({ outcome, skipped, retryInMs }: AttemptResult): WorkEnd {
  if (outcome.ok || skipped) return 'done';
  const error = outcome.error ?? `HTTP ${outcome.status}`;
  return retryInMs === null ? { dead: error } : { retryInMs, error };
}

function outcomeOf({ outcome, skipped, retryInMs }: AttemptResult): string {
  if (skipped) return 'skipped';
  if (outcome.ok) return 'delivered';
  return retryInMs === null ? 'failed' : 'retrying';
}

function skipped(delivery: ClaimedDelivery, error: string): AttemptResult {
  return { delivery, outcome: { ok: false, status: null, body: null, error, durationMs: 0 }, skipped: true, retryInMs: null };
}

/** Per subscription, in the order attempts ended: whether one succeeded, and the failures after the last success. */
function failureCounts(items: AttemptResult[]): { id: string; reset: boolean; tail: number }[] {
  const counts = new Map<string, { id: string; reset: boolean; tail: number }>();
  for (const { delivery, outcome, skipped } of items) {
    if (skipped || delivery.kind === 'test') continue;
    const c = counts.get(delivery.subscription.id) ?? { id: delivery.subscription.id, reset: false, tail: 0 };
    if (outcome.ok) Object.assign(c, { reset: true, tail: 0 });
    else c.tail++;
    counts.set(c.id, c);
  }
  return [...counts.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
}
