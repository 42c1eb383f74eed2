import type { Knex } from 'knex';

/**
 * Attempt output as the worker captures it: one row per line, numbered per attempt (`seq`, assigned
 * by the attempt's one runner), so readers page and streams resume by seq. The attempt's resolved
 * git metadata goes into its existing `git` column.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('attempt_logs', (t) => {
    t.uuid('attempt_id').notNullable().references('job_attempts.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.text('stream').notNullable();
    t.text('line').notNullable();
    t.timestamp('at', { useTz: true }).notNullable();
    t.primary(['attempt_id', 'seq']);
  });
  await db.raw(`ALTER TABLE attempt_logs ADD CONSTRAINT attempt_logs_stream_check CHECK (stream IN ('stdout', 'stderr', 'system'))`);
}
