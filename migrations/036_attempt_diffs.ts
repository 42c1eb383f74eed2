import type { Knex } from 'knex';

/**
 * attempt_diffs: what each attempt changed, as its worker recorded it when the attempt ended
 * (docs/diffs.md): the files with their line counts, and the unified patch up to the worker's
 * limit (worker.diff). One row per attempt, written once under the attempt's lease.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('attempt_diffs', (t) => {
    t.uuid('attempt_id').primary().references('job_attempts.id').onDelete('CASCADE');
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.text('base_sha').notNullable();
    t.text('head_sha');
    t.boolean('uncommitted').notNullable();
    t.jsonb('files').notNullable();
    t.integer('files_total').notNullable();
    t.integer('additions').notNullable();
    t.integer('deletions').notNullable();
    t.text('patch').notNullable();
    t.bigInteger('patch_bytes').notNullable();
    t.boolean('patch_truncated').notNullable();
    t.integer('max_patch_bytes').notNullable();
    t.integer('max_files').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['job_id']);
  });
  await db.raw(`ALTER TABLE attempt_diffs ADD CONSTRAINT attempt_diffs_counts CHECK (
    files_total >= 0 AND additions >= 0 AND deletions >= 0 AND patch_bytes >= 0 AND max_patch_bytes >= 0 AND max_files >= 1)`);
}
