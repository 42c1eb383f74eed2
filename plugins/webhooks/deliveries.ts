import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { paginate, type ListQuery, type Page } from '../../core/http/lists.ts';
import type { DeliveredEvent } from './envelope.ts';
import type { Outcome } from '../../core/http/guarded-post.ts';
import type { DELIVERY_KINDS, DELIVERY_STATUSES } from './schemas.ts';

export type DeliveryKind = (typeof DELIVERY_KINDS)[number];
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveryRow {
  id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  kind: DeliveryKind;
  replay_id: string | null;
  dedupe_key: string | null;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  response_status: number | null;
  response_body: string | null;
  error: string | null;
  duration_ms: number | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

export type Delivery = DeliveryRow;

export interface NewDelivery {
  id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  kind: DeliveryKind;
  replay_id: string | null;
  /** Set for deliveries of events (`appLinkKey`); replays and tests have none. */
  dedupe_key: string | null;
}

/** The dedupe key of the delivery of `eventId` to `subscriptionId`: one such delivery ever. */
export const appLinkKey = (subscriptionId: string, eventId: string): string => `app_link:${subscriptionId}:${eventId}`;

/** A delivery to send now (its work item is leased to this process), with what sending it needs. */
export interface ClaimedDelivery {
  id: string;
  kind: DeliveryKind;
  replay_id: string | null;
  attempts: number;
  subscription: { id: string; url: string; secret_enc: string; live: boolean };
  /** null when the event is gone (its project was deleted). */
  event: DeliveredEvent | null;
}

/** A delivery still to send, before its event is read. */
export type DeliveryToSend = Omit<ClaimedDelivery, 'event'> & { event_id: string };

/** What became of one claimed delivery: an attempt's outcome, or not sent at all (`skipped`). */
export interface AttemptResult {
  delivery: ClaimedDelivery;
  outcome: Outcome;
  skipped: boolean;
  /** Delay before the next attempt, when there is one. */
  retryInMs: number | null;
}

export interface DeliveryFilters extends ListQuery {
  status?: DeliveryStatus;
  kind?: DeliveryKind;
}

const ACTIVE = "('pending', 'retrying')";

@injectable()
export class DeliveryRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  /** Takes up to `limit` event ids off the outbox (SKIP LOCKED). */
  async takeOutbox(trx: Db, limit: number): Promise<string[]> {
    const { rows } = await trx.raw(
      `DELETE FROM webhook_outbox o USING (SELECT id FROM webhook_outbox ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED) pick
       WHERE o.id = pick.id RETURNING o.id, o.event_id`,
      [limit],
    );
    return rows.sort((a: { id: number }, b: { id: number }) => a.id - b.id).map((r: { event_id: string }) => r.event_id);
  }

  /**
   * Inserts deliveries, skipping an event already in flight to the subscription and one whose dedupe
   * key exists (delivered or in flight); returns the ids written.
   */
  async insert(trx: Db, rows: NewDelivery[]): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    const { rows: written } = await trx.raw(
      `INSERT INTO webhook_deliveries (id, subscription_id, event_id, event_type, kind, replay_id, dedupe_key)
       SELECT r.id, r.subscription_id, r.event_id, r.event_type, r.kind, r.replay_id, r.dedupe_key
       FROM jsonb_to_recordset(?::jsonb) AS r(id text, subscription_id text, event_id text, event_type text, kind text, replay_id text, dedupe_key text)
       ON CONFLICT DO NOTHING
       RETURNING id`,
      [JSON.stringify(rows)],
    );
    return new Set(written.map((r: { id: string }) => r.id));
  }

  /** Of the deliveries `ids`, those still to send (pending or retrying) with their subscription; their events are read apart. */
  async toSend(ids: string[]): Promise<DeliveryToSend[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.db.raw(
      `SELECT d.id, d.kind, d.replay_id, d.attempts, d.subscription_id, d.event_id, s.url, s.secret_enc, (s.enabled AND s.deleted_at IS NULL) AS live
       FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
       WHERE d.id = ANY(?::text[]) AND d.status IN ${ACTIVE}`,
      [ids],
    );
    return rows.map((r: Record<string, any>) => ({
      id: r.id,
      kind: r.kind,
      replay_id: r.replay_id,
      attempts: r.attempts,
      subscription: { id: r.subscription_id, url: r.url, secret_enc: r.secret_enc, live: r.live },
      event_id: r.event_id,
    }));
  }

  /**
   * Writes the results of attempts: succeeded, retrying (with its next time) or failed. The caller
   * fenced them (their work items' leases); the attempt count fences them once more.
   */
  async record(trx: Db, results: AttemptResult[]): Promise<void> {
    if (results.length === 0) return;
    const values = results.map(({ delivery, outcome, skipped, retryInMs }) => ({
      id: delivery.id,
      attempts_before: delivery.attempts,
      attempts: skipped ? delivery.attempts : delivery.attempts + 1,
      status: outcome.ok ? 'succeeded' : retryInMs === null ? 'failed' : 'retrying',
      retry_ms: retryInMs,
      response_status: outcome.status,
      response_body: outcome.body,
      error: outcome.error,
      duration_ms: skipped ? null : outcome.durationMs,
      attempted: !skipped,
    }));
    await trx.raw(
      `UPDATE webhook_deliveries d SET
         attempts = r.attempts, status = r.status,
         next_attempt_at = CASE WHEN r.status = 'retrying' THEN now() + make_interval(secs => r.retry_ms / 1000.0) END,
         last_attempt_at = CASE WHEN r.attempted THEN now() ELSE d.last_attempt_at END,
         response_status = r.response_status, response_body = r.response_body, error = r.error, duration_ms = r.duration_ms,
         updated_at = now(), completed_at = CASE WHEN r.status IN ('succeeded', 'failed') THEN now() END
       FROM jsonb_to_recordset(?::jsonb) AS r(id text, attempts_before int, attempts int, status text, retry_ms int,
            response_status int, response_body text, error text, duration_ms int, attempted boolean)
       WHERE d.id = r.id AND d.status IN ${ACTIVE} AND d.attempts = r.attempts_before`,
      [JSON.stringify(values)],
    );
  }

  /** Ends a delivery still to send as failed with `error` (its work was given up); its replay, if any. */
  async abandon(trx: Db, id: string, error: string): Promise<{ replay_id: string | null } | undefined> {
    const [row] = await trx('webhook_deliveries')
      .where({ id })
      .whereIn('status', ['pending', 'retrying'])
      .update({ status: 'failed', error, next_attempt_at: null, updated_at: trx.fn.now(), completed_at: trx.fn.now() })
      .returning(['replay_id']);
    return row;
  }

  /** Records a delivery made and finished in one go (test deliveries). */
  async insertFinished(row: Omit<DeliveryRow, 'created_at' | 'updated_at' | 'next_attempt_at' | 'last_attempt_at' | 'completed_at'>): Promise<DeliveryRow> {
    const now = this.db.fn.now();
    const [created] = await this.db('webhook_deliveries')
      .insert({ ...row, last_attempt_at: now, completed_at: now })
      .returning('*');
    return created;
  }

  list(subscriptionId: string, f: DeliveryFilters): Promise<Page<Delivery>> {
    const q = this.db('webhook_deliveries').where({ subscription_id: subscriptionId });
    if (f.status) q.where('status', f.status);
    if (f.kind) q.where('kind', f.kind);
    return paginate(q, f, (row: DeliveryRow) => row, 'webhook_deliveries');
  }
}
