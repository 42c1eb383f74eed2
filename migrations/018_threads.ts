import type { Knex } from 'knex';

/**
 * Threads of a project and their messages. A thread may carry a key, unique in its project
 * (`coord:job:<job_id>` for the coordination thread of a team dispatch, whose job is kept in
 * `job_id`). Messages are numbered per thread (`seq` 1, 2, …, assigned under the thread's row lock
 * from `message_count`), so readers page and resume by seq and the order never depends on clocks.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('threads', (t) => {
    t.text('id').primary();
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('key');
    t.text('title');
    t.text('job_id').references('jobs.id').onDelete('SET NULL');
    t.text('created_by_type').notNullable();
    t.text('created_by');
    t.integer('message_count').notNullable().defaultTo(0);
    t.timestamp('last_message_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.unique(['project_id', 'key'], { indexName: 'threads_project_key_unique' });
    t.index(['project_id', 'created_at']);
  });

  await db.schema.createTable('thread_messages', (t) => {
    t.text('id').primary();
    t.text('thread_id').notNullable().references('threads.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.text('kind').notNullable();
    t.text('body').notNullable();
    t.text('author_type').notNullable();
    t.text('author_id');
    t.text('job_id').references('jobs.id').onDelete('SET NULL');
    t.text('reply_to').references('thread_messages.id').onDelete('SET NULL');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.unique(['thread_id', 'seq'], { indexName: 'thread_messages_seq_unique' });
  });
  await db.raw(
    `ALTER TABLE thread_messages ADD CONSTRAINT thread_messages_kind_check CHECK (kind IN ('message', 'status', 'directive', 'question', 'update'))`,
  );
  await db.raw(
    `ALTER TABLE thread_messages ADD CONSTRAINT thread_messages_author_type_check CHECK (author_type IN ('user', 'service_account', 'job', 'system'))`,
  );
  await db.raw(`ALTER TABLE threads ADD CONSTRAINT threads_created_by_type_check CHECK (created_by_type IN ('user', 'service_account', 'job', 'system'))`);
  await db.raw('CREATE INDEX thread_messages_reply_to ON thread_messages (reply_to) WHERE reply_to IS NOT NULL');
}
