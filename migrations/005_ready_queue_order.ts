import type { Knex } from 'knex';

/**
 * The claim scan orders by priority, created_at, id: with id in the index, jobs created in the
 * same instant (a bulk import) are read in order instead of sorted on every claim.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw('DROP INDEX jobs_ready_queue');
  await db.raw(`CREATE INDEX jobs_ready_queue ON jobs (priority, created_at, id) WHERE phase = 'ready'`);
}
