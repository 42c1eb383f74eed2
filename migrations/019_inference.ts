import type { Knex } from 'knex';

/**
 * The inference domain: targets (named upstreams an org or the system defines), the managed-model
 * catalog (`managed/<name>` → a target and an upstream model, with prices), and one usage row per
 * proxied call. A target or model with a null org_id is a system one; names are unique per scope.
 * Credentials are secret names, never values.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('inference_targets', (t) => {
    t.text('id').primary();
    t.text('org_id').references('orgs.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('kind').notNullable();
    t.text('base_url').notNullable();
    t.text('credential_secret');
    t.specificType('allowed_models', 'text[]').notNullable().defaultTo('{}');
    t.integer('request_timeout_ms');
    t.integer('idle_timeout_ms');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
  await db.raw("CREATE UNIQUE INDEX inference_targets_scope_name ON inference_targets (COALESCE(org_id, ''), name)");
  await db.raw("ALTER TABLE inference_targets ADD CONSTRAINT inference_targets_kind_check CHECK (kind IN ('openai', 'anthropic'))");

  await db.schema.createTable('inference_models', (t) => {
    t.text('id').primary();
    t.text('org_id').references('orgs.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('target_id').notNullable().references('inference_targets.id').onDelete('RESTRICT');
    t.text('upstream_model').notNullable();
    t.text('description');
    // USD per million tokens; null when not priced
    t.decimal('input_price', 18, 6);
    t.decimal('output_price', 18, 6);
    t.decimal('cache_read_price', 18, 6);
    t.decimal('cache_write_price', 18, 6);
    t.decimal('reasoning_price', 18, 6);
    // the projects that may use it; null: every project of its scope
    t.specificType('project_ids', 'text[]');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['target_id']);
  });
  await db.raw("CREATE UNIQUE INDEX inference_models_scope_name ON inference_models (COALESCE(org_id, ''), name)");
  await db.raw(`ALTER TABLE inference_models ADD CONSTRAINT inference_models_prices_check CHECK (
    COALESCE(input_price, 0) >= 0 AND COALESCE(output_price, 0) >= 0 AND COALESCE(cache_read_price, 0) >= 0
    AND COALESCE(cache_write_price, 0) >= 0 AND COALESCE(reasoning_price, 0) >= 0)`);

  await db.schema.createTable('inference_usage', (t) => {
    t.bigIncrements('id').primary();
    t.text('org_id');
    t.text('project_id');
    t.text('job_id');
    t.text('attempt_id');
    t.text('principal_kind').notNullable();
    t.text('principal_id').notNullable();
    t.text('target_id');
    t.text('provider_kind').notNullable();
    t.text('model').notNullable();
    t.text('upstream_model').notNullable();
    t.boolean('stream').notNullable();
    t.integer('status').notNullable();
    t.text('error');
    t.integer('input_tokens').notNullable().defaultTo(0);
    t.integer('output_tokens').notNullable().defaultTo(0);
    t.integer('cache_read_tokens').notNullable().defaultTo(0);
    t.integer('cache_write_tokens').notNullable().defaultTo(0);
    t.integer('reasoning_tokens').notNullable().defaultTo(0);
    t.integer('latency_ms').notNullable();
    t.integer('first_byte_ms');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['org_id', 'created_at']);
    t.index(['attempt_id']);
  });
}
