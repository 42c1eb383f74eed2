import type { Knex } from 'knex';

/**
 * What retention reads (core/db/prune.ts): finished events by age and finished webhook deliveries by
 * when they finished, so the housekeeping run each minute is an index range scan, not a scan of the
 * whole table, also when nothing is old enough to go.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw(`CREATE INDEX events_finished_age ON events (created_at) WHERE status IN ('completed', 'failed')`);
  await db.raw(`CREATE INDEX webhook_deliveries_finished_age ON webhook_deliveries (completed_at) WHERE status IN ('succeeded', 'failed')`);
}
