import type { Knex } from 'knex';

/**
 * Request rate limits (core/http/rate-limit.ts, docs/operations.md "Rate limits and quotas"): one
 * token bucket per caller (`user:<id>`, `service_account:<id>`, `job:<id>`, `address:<ip>`), shared
 * by every api replica. A process takes tokens from its row in batches with one UPDATE … RETURNING
 * and spends them locally. `taken` is what the last lease took. Rows untouched for long are full
 * buckets and are deleted. And an index for the per-org count of queued jobs (limits.org.queued_jobs).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('rate_limit_buckets', (t) => {
    t.text('key').primary();
    t.double('tokens').notNullable();
    t.integer('taken').notNullable().defaultTo(0);
    t.timestamp('refilled_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
  await db.raw('CREATE INDEX rate_limit_buckets_refilled ON rate_limit_buckets (refilled_at)');
  await db.raw("CREATE INDEX jobs_project_queued ON jobs (project_id) WHERE phase IN ('ready', 'backlog')");
}
