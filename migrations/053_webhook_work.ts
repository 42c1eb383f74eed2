import type { Knex } from 'knex';

/**
 * Webhook deliveries move onto the work engine (core/work, queue `webhooks`): the engine's lease and
 * `run_at` replace `webhook_deliveries.lease_expires_at`, the dispatcher's claim and the scheduler's
 * `webhooks.redeliver` jobs. Deliveries still to send when this lands get their work item, queued:
 * a pending one due now, a retrying one at its `next_attempt_at`; their attempts so far count
 * towards the item's (1 + 5 retries + 3 lost leases with the default `webhooks.retry_delays_ms`).
 * A delivery an old dispatcher was sending at the upgrade may be sent once more.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw(`INSERT INTO work_items (queue, key, payload, status, attempts, max_attempts, run_at)
    SELECT 'webhooks', id, '{}', 'queued', attempts, GREATEST(9, attempts + 4),
      CASE WHEN status = 'retrying' THEN COALESCE(next_attempt_at, now()) ELSE now() END
    FROM webhook_deliveries WHERE status IN ('pending', 'retrying')
    ON CONFLICT (queue, key) DO NOTHING`);
  await db.raw('DROP INDEX IF EXISTS webhook_deliveries_pending');
  await db.raw('DROP INDEX IF EXISTS webhook_deliveries_retrying');
  await db.schema.alterTable('webhook_deliveries', (t) => t.dropColumn('lease_expires_at'));
}
