import type { Knex } from 'knex';

/**
 * Environments of a project and their deploys. An environment comes from the manifest
 * (`source = 'manifest'`, synced on every manifest sync) or from `env-ensure` and the API
 * (`source = 'ensured'`); names are unique per project. `current_release` is what serves now
 * (id, tag, git SHA, manifest hash, image digests); a failed deploy never changes it. Deploys are
 * the history, newest first by created_at.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('environments', (t) => {
    t.text('id').primary();
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('type').notNullable();
    t.text('namespace');
    t.text('db_ref');
    t.text('kind');
    t.text('pipeline');
    t.jsonb('pipeline_inputs').notNullable().defaultTo('{}');
    t.text('source').notNullable();
    t.text('health').notNullable().defaultTo('unknown');
    t.jsonb('health_detail').notNullable().defaultTo('[]');
    t.timestamp('health_checked_at', { useTz: true });
    t.boolean('suspended').notNullable().defaultTo(false);
    t.text('suspended_reason');
    t.timestamp('suspended_at', { useTz: true });
    t.jsonb('current_release');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.unique(['project_id', 'name'], { indexName: 'environments_project_name_unique' });
  });
  await db.raw("ALTER TABLE environments ADD CONSTRAINT environments_type_check CHECK (type IN ('persistent', 'temporary'))");
  await db.raw("ALTER TABLE environments ADD CONSTRAINT environments_source_check CHECK (source IN ('manifest', 'ensured'))");
  await db.raw("ALTER TABLE environments ADD CONSTRAINT environments_health_check CHECK (health IN ('healthy', 'degraded', 'unknown'))");

  await db.schema.createTable('environment_deploys', (t) => {
    t.text('id').primary();
    t.text('environment_id').notNullable().references('environments.id').onDelete('CASCADE');
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('status').notNullable();
    t.jsonb('release').notNullable();
    t.jsonb('previous_release');
    t.text('rollback_of');
    t.boolean('direct').notNullable().defaultTo(true);
    t.text('pipeline_run_id');
    t.text('error_message');
    t.jsonb('services').notNullable().defaultTo('[]');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.index(['environment_id', 'created_at']);
  });
  await db.raw(
    "ALTER TABLE environment_deploys ADD CONSTRAINT environment_deploys_status_check CHECK (status IN ('running', 'succeeded', 'failed', 'pipeline'))",
  );
}
