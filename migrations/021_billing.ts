import type { Knex } from 'knex';

/**
 * The billing domain and the indexes analytics reads with.
 * - rate_cards: versioned prices. The card in force at an instant is the one with the latest
 *   effective_at at or before it. Per model (lower-case id) USD per million tokens of each class;
 *   compute in USD per minute per resource class. Cards are never edited: a new price is a new card.
 * - exchange_rates: how many USD one unit of a currency is worth, from effective_at on.
 * - org_billing: an org's billing currency, monthly budget (and whether going over refuses or only
 *   warns), its balance and the threshold under which its environments are suspended.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('rate_cards', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.timestamp('effective_at', { useTz: true }).notNullable().unique();
    t.text('provenance').notNullable();
    t.jsonb('models').notNullable().defaultTo('{}');
    t.jsonb('compute').notNullable().defaultTo('{}');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });

  await db.schema.createTable('exchange_rates', (t) => {
    t.text('id').primary();
    t.text('currency').notNullable();
    t.decimal('rate_to_usd', 24, 12).notNullable();
    t.timestamp('effective_at', { useTz: true }).notNullable();
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.unique(['currency', 'effective_at']);
  });
  await db.raw('ALTER TABLE exchange_rates ADD CONSTRAINT exchange_rates_positive CHECK (rate_to_usd > 0)');
  await db.raw("ALTER TABLE exchange_rates ADD CONSTRAINT exchange_rates_currency CHECK (currency ~ '^[A-Z]{3}$')");

  await db.schema.createTable('org_billing', (t) => {
    t.text('org_id').primary().references('orgs.id').onDelete('CASCADE');
    t.text('currency').notNullable().defaultTo('USD');
    t.decimal('monthly_budget', 18, 6);
    t.text('budget_mode').notNullable().defaultTo('refuse');
    t.decimal('balance', 18, 6);
    t.decimal('balance_threshold', 18, 6);
    t.timestamp('below_threshold_since', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
  await db.raw("ALTER TABLE org_billing ADD CONSTRAINT org_billing_mode CHECK (budget_mode IN ('refuse', 'warn'))");
  await db.raw('ALTER TABLE org_billing ADD CONSTRAINT org_billing_budget CHECK (monthly_budget IS NULL OR monthly_budget >= 0)');
  await db.raw('ALTER TABLE org_billing ADD CONSTRAINT org_billing_threshold CHECK (balance_threshold IS NULL OR balance_threshold >= 0)');

  // Analytics, each count an index-only scan: jobs done or failed in a window (a failed attempt's close
  // reason is lifecycle's `attempt N failed (…): …`), the jobs running now, runs of a window, receipts of a window.
  await db.raw("CREATE INDEX jobs_project_done ON jobs (project_id, closed_at) WHERE phase = 'done'");
  await db.raw("CREATE INDEX jobs_project_failed ON jobs (project_id, closed_at) WHERE phase = 'cancelled' AND close_reason LIKE 'attempt % failed%'");
  await db.raw("CREATE INDEX jobs_project_active ON jobs (project_id) WHERE phase = 'active'");
  await db.raw('CREATE INDEX pipeline_runs_project_created ON pipeline_runs (project_id, created_at) INCLUDE (status, started_at, completed_at)');
  await db.raw('CREATE INDEX attempt_receipts_created ON attempt_receipts (created_at)');
}
