import type { Knex } from 'knex';

/**
 * Pipeline runs, their steps (one job each), the ordered log of what happened to them (the
 * streams read it, resuming by id), and the event spine's table, where a failed run is recorded
 * as `system.pipeline.failed`.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('pipeline_runs', (t) => {
    t.text('id').primary();
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('pipeline_name').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.text('ref');
    t.text('git_sha');
    t.text('env_name');
    t.jsonb('inputs').notNullable().defaultTo('{}');
    t.specificType('only_steps', 'text[]');
    t.text('manifest_hash').notNullable();
    t.text('error_message');
    t.text('cancel_reason');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['project_id', 'pipeline_name', 'created_at']);
  });
  await db.raw(`ALTER TABLE pipeline_runs ADD CONSTRAINT pipeline_runs_status_check
    CHECK (status IN ('pending', 'running', 'awaiting_approval', 'succeeded', 'failed', 'cancelled'))`);

  await db.schema.createTable('pipeline_run_steps', (t) => {
    t.text('run_id').notNullable().references('pipeline_runs.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.integer('position').notNullable();
    t.text('job_id').notNullable().unique().references('jobs.id').onDelete('CASCADE');
    t.text('execution_type').notNullable();
    t.specificType('depends_on', 'text[]').notNullable().defaultTo('{}');
    t.boolean('approval').notNullable().defaultTo(false);
    t.text('status').notNullable().defaultTo('pending');
    t.text('approved_by');
    t.timestamp('approved_at', { useTz: true });
    t.timestamp('started_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.primary(['run_id', 'name']);
  });
  await db.raw(`ALTER TABLE pipeline_run_steps ADD CONSTRAINT pipeline_run_steps_status_check
    CHECK (status IN ('pending', 'awaiting_approval', 'running', 'succeeded', 'failed', 'cancelled'))`);
  await db.raw(`ALTER TABLE pipeline_run_steps ADD CONSTRAINT pipeline_run_steps_type_check CHECK (execution_type IN ('action', 'script', 'agent'))`);

  await db.schema.createTable('pipeline_run_events', (t) => {
    t.bigIncrements('id').primary();
    t.text('run_id').notNullable().references('pipeline_runs.id').onDelete('CASCADE');
    t.text('step_name');
    t.text('type').notNullable();
    t.jsonb('data').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['run_id', 'id']);
  });

  await db.schema.createTable('events', (t) => {
    t.text('id').primary();
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.text('source').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.jsonb('payload_json').notNullable().defaultTo('{}');
    t.text('env_name');
    t.text('ref_sha');
    t.text('ref_branch');
    t.text('actor_type');
    t.text('actor_id');
    t.text('dedupe_key');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['project_id', 'created_at']);
  });
  await db.raw(`ALTER TABLE events ADD CONSTRAINT events_source_check
    CHECK (source IN ('vcshost', 'chatapp', 'cron', 'manual', 'app', 'system', 'runner', 'chat'))`);
  await db.raw(`ALTER TABLE events ADD CONSTRAINT events_status_check CHECK (status IN ('pending', 'processing', 'completed', 'failed'))`);
  await db.raw(`ALTER TABLE events ADD CONSTRAINT events_actor_type_check CHECK (actor_type IS NULL OR actor_type IN ('user', 'system', 'app'))`);
  await db.raw('CREATE UNIQUE INDEX events_dedupe ON events (project_id, dedupe_key) WHERE dedupe_key IS NOT NULL');
  await db.raw(`CREATE INDEX events_pending ON events (created_at) WHERE status = 'pending'`);
}
