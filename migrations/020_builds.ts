import type { Knex } from 'knex';

/**
 * The builds domain: immutable build specs (`bld_…`), their runs (several per spec, one active at a
 * time), the images a run produced, each run's builder output, and releases (`rel_…`, a tag per
 * project naming a successful build's digests).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('build_specs', (t) => {
    t.text('id').primary();
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('git_sha').notNullable();
    t.text('manifest_hash').notNullable();
    // null: every service with build config
    t.specificType('services', 'text[]');
    t.jsonb('inputs').notNullable().defaultTo('{}');
    t.jsonb('registry');
    t.jsonb('cache').notNullable().defaultTo('{}');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['project_id', 'created_at']);
  });
  await db.raw("ALTER TABLE build_specs ADD CONSTRAINT build_specs_sha_check CHECK (git_sha ~ '^[0-9a-f]{40}$')");

  await db.schema.createTable('build_runs', (t) => {
    t.text('id').primary();
    t.text('build_id').notNullable().references('build_specs.id').onDelete('CASCADE');
    t.text('status').notNullable().defaultTo('pending');
    t.text('backend').notNullable();
    t.boolean('force_rebuild').notNullable().defaultTo(false);
    t.text('runner_ref');
    t.text('logs_ref');
    t.text('error_class');
    t.text('error_message');
    t.text('failed_stage');
    t.specificType('log_tail', 'text[]');
    // the run whose artifacts this one reused
    t.text('reused_from');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('heartbeat_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.index(['build_id', 'created_at']);
  });
  await db.raw(`ALTER TABLE build_runs ADD CONSTRAINT build_runs_status_check
    CHECK (status IN ('pending', 'building', 'completed', 'failed', 'cancelled'))`);
  await db.raw(`ALTER TABLE build_runs ADD CONSTRAINT build_runs_error_class_check
    CHECK (error_class IS NULL OR error_class IN ('auth_error', 'clone_error', 'build_error', 'timeout_error', 'resource_error', 'registry_error'))`);
  // One active run per spec; the claim scans pending runs oldest first.
  await db.raw("CREATE UNIQUE INDEX build_runs_one_active ON build_runs (build_id) WHERE status IN ('pending', 'building')");
  await db.raw("CREATE INDEX build_runs_pending ON build_runs (created_at) WHERE status = 'pending'");

  await db.schema.createTable('build_artifacts', (t) => {
    t.bigIncrements('id').primary();
    t.text('build_id').notNullable().references('build_specs.id').onDelete('CASCADE');
    t.text('run_id').notNullable().references('build_runs.id').onDelete('CASCADE');
    t.text('service_name').notNullable();
    t.text('image_ref').notNullable();
    t.text('digest').notNullable();
    t.specificType('platforms', 'text[]').notNullable().defaultTo('{}');
    t.bigInteger('size_bytes');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.unique(['run_id', 'service_name']);
    t.index(['build_id']);
  });

  await db.schema.createTable('build_logs', (t) => {
    t.text('run_id').notNullable().references('build_runs.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.text('stream').notNullable();
    t.text('line').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.primary(['run_id', 'seq']);
  });

  await db.schema.createTable('releases', (t) => {
    t.text('id').primary();
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('build_id').notNullable().references('build_specs.id').onDelete('RESTRICT');
    t.text('git_sha').notNullable();
    t.text('manifest_hash').notNullable();
    t.jsonb('image_digests').notNullable();
    t.text('version');
    t.text('tag').notNullable();
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.unique(['project_id', 'tag']);
  });
}
