import type { Logger } from 'pino';
import { Batcher } from '../../core/batcher.ts';
import { inject, injectable } from '../../core/di.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Sealer } from '../../core/crypto/sealer.ts';
import { SchedulerToken, type Scheduler } from '../../core/ports/scheduler.ts';
import type { Config } from '../../core/config/schema.ts';
import { Tokens } from '../../core/tokens.ts';
import { DeliveryRepository, type AttemptResult, type ClaimedDelivery } from './deliveries.ts';
import { deliveryHeaders, envelope } from './envelope.ts';
import { ReplayRepository } from './replay-repository.ts';
import { SubscriptionRepository, secretContext } from './repository.ts';
import { Transport } from '../../core/http/guarded-post.ts';
import { Metrics } from '../../core/metrics.ts';

/** The Agenda job that makes a failed delivery due again. */
export const REDELIVER_JOB = 'webhooks.redeliver';

/**
 * Sends claimed deliveries and records what happened. Results are written in batches (one
 * transaction for many attempts): the delivery rows, the subscriptions' failure counts (auto-
 * disable), finished replays; then each retry is scheduled on the Scheduler at its time.
 */
@injectable()
export class DeliverySender {
  private readonly retryDelays: number[];
  private readonly disableAfter: number;
  private readonly recorder = new Batcher<AttemptResult, void>((items) => this.record(items), { maxBatch: 256, concurrency: 2 });
  private readonly outcomes;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Sealer) private readonly sealer: Sealer,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(Transport) private readonly transport: Transport,
    @inject(DeliveryRepository) private readonly deliveries: DeliveryRepository,
    @inject(SubscriptionRepository) private readonly subscriptions: SubscriptionRepository,
    @inject(ReplayRepository) private readonly replays: ReplayRepository,
    @inject(SchedulerToken) private readonly scheduler: Scheduler,
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

  /** One attempt of a leased delivery; resolves once its result is recorded. */
  async deliver(d: ClaimedDelivery): Promise<void> {
    await this.recorder.submit(await this.attempt(d));
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

  private async record(items: AttemptResult[]): Promise<void[]> {
    const { retrying, disabled } = await this.db.transaction(async (trx) => {
      const retrying = await this.deliveries.record(trx, items);
      const disabled = await this.subscriptions.countOutcomes(trx, failureCounts(items), this.disableAfter);
      const finishedReplays = new Set(items.filter((r) => r.delivery.replay_id !== null && r.retryInMs === null).map((r) => r.delivery.replay_id!));
      await this.replays.settle(trx, [...finishedReplays]);
      return { retrying, disabled };
    });
    for (const r of items) this.outcomes.inc({ outcome: outcomeOf(r) });
    if (disabled.length) this.logger.warn({ webhooks: disabled, after: this.disableAfter }, 'webhooks disabled after consecutive failed deliveries');
    // A schedule lost here is found by the dispatcher's overdue sweep.
    await Promise.all(
      retrying.map((r) =>
        this.scheduler
          .schedule(r.next_attempt_at, REDELIVER_JOB, { delivery_id: r.id, attempts: r.attempts })
          .catch((err) => this.logger.error({ err, delivery: r.id }, 'scheduling a webhook retry failed')),
      ),
    );
    return items.map(() => undefined);
  }
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
