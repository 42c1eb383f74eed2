import type { Knex } from 'knex';

export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('jobs', (t) => {
    t.text('id').primary();
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('parent_id').references('jobs.id').onDelete('CASCADE');
    t.smallint('depth').notNullable().defaultTo(0);
    t.integer('child_count').notNullable().defaultTo(0);
    t.text('title').notNullable();
    t.text('description');
    t.text('issue_type').notNullable().defaultTo('task');
    t.specificType('labels', 'text[]').notNullable().defaultTo('{}');
    t.text('phase').notNullable().defaultTo('ready');
    t.smallint('priority').notNullable().defaultTo(2);
    t.text('assignee');
    t.text('review_required').notNullable().defaultTo('none');
    t.text('review_status');
    t.jsonb('hints').notNullable().defaultTo('{}');
    t.jsonb('git');
    t.jsonb('resolved_git');
    t.jsonb('workspace');
    t.text('env_name');
    t.text('execution_mode').notNullable().defaultTo('persistent');
    t.jsonb('harness')
      .notNullable()
      .defaultTo('{}')
      .comment('harness, harness_profile, harness_variant, harness_options, model, reasoning_effort, harness_profile_override');
    t.jsonb('env_overrides');
    t.jsonb('resource_refs').notNullable().defaultTo('[]');
    t.timestamp('defer_until', { useTz: true });
    t.timestamp('due_at', { useTz: true });
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('closed_at', { useTz: true });
    t.text('close_reason');
    t.index(['project_id', 'created_at']);
    t.index(['parent_id']);
  });
  await db.raw(`ALTER TABLE jobs ADD CONSTRAINT jobs_phase_check CHECK (phase IN ('idea', 'backlog', 'ready', 'active', 'review', 'done', 'cancelled'))`);
  await db.raw('ALTER TABLE jobs ADD CONSTRAINT jobs_priority_check CHECK (priority BETWEEN 0 AND 4)');
  await db.raw('ALTER TABLE jobs ADD CONSTRAINT jobs_depth_check CHECK (depth BETWEEN 0 AND 2)');
  // The claimer's scan: ready jobs in priority then age order.
  await db.raw(`CREATE INDEX jobs_ready_queue ON jobs (priority, created_at) WHERE phase = 'ready'`);

  // "{job_id} <relation_type> {related_job_id}"; blocks is stored as written and read as the inverse of blocked_by.
  await db.schema.createTable('job_relations', (t) => {
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.text('related_job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.text('relation_type').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.primary(['job_id', 'related_job_id']);
    t.index(['related_job_id']);
  });
  await db.raw(
    `ALTER TABLE job_relations ADD CONSTRAINT job_relations_type_check CHECK (relation_type IN ('blocked_by', 'blocks', 'waits_for', 'conditional_blocks'))`,
  );
  await db.raw('ALTER TABLE job_relations ADD CONSTRAINT job_relations_no_self CHECK (job_id <> related_job_id)');

  await db.schema.createTable('job_attempts', (t) => {
    t.uuid('id').primary();
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.integer('attempt_number').notNullable();
    t.text('status').notNullable().defaultTo('running');
    t.text('result_status');
    t.jsonb('result_json');
    t.text('result_summary');
    t.text('error');
    t.text('lease_owner');
    t.uuid('lease_token');
    t.timestamp('lease_expires_at', { useTz: true });
    t.jsonb('git');
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('ended_at', { useTz: true });
    t.unique(['job_id', 'attempt_number']);
  });
  await db.raw(`ALTER TABLE job_attempts ADD CONSTRAINT job_attempts_status_check CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled'))`);
  await db.raw(`CREATE INDEX job_attempts_leases ON job_attempts (lease_expires_at) WHERE status = 'running'`);

  // One running job per gate key: the primary key is the lock.
  await db.schema.createTable('job_gates', (t) => {
    t.text('gate_key').primary();
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.uuid('attempt_id').notNullable().references('job_attempts.id').onDelete('CASCADE');
    t.timestamp('acquired_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['attempt_id']);
  });

  // submit / approve / reject, with the summary, comment or reason each carries.
  await db.schema.createTable('job_reviews', (t) => {
    t.bigIncrements('id');
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.text('action').notNullable();
    t.text('text');
    t.text('actor_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['job_id', 'created_at']);
  });

  await db.schema.createTable('job_attachments', (t) => {
    t.text('id').primary();
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('mime_type');
    t.binary('content').notNullable();
    t.integer('size_bytes').notNullable();
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.unique(['job_id', 'name']);
  });
}
