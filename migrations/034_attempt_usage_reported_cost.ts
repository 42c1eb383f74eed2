import type { Knex } from 'knex';

/**
 * attempt_usage.reported_cost_usd: what the coding CLI said an `llm.call` cost, when it computes a
 * cost itself (docs/receipts.md). Shown on the receipt beside svc's own pricing, never billed. Null
 * when the CLI reported none (every row written before this migration).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('attempt_usage', (t) => {
    t.decimal('reported_cost_usd', null);
  });
  await db.raw('ALTER TABLE attempt_usage ADD CONSTRAINT attempt_usage_reported_cost CHECK (reported_cost_usd IS NULL OR reported_cost_usd >= 0)');
}
