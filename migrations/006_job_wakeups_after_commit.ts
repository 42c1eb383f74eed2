import type { Knex } from 'knex';

/**
 * Wake-ups move from a trigger to the application, which sends them after commit (JobWakeups):
 * a NOTIFY inside each job write made those writes commit one at a time.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw('DROP TRIGGER jobs_notify ON jobs');
  await db.raw('DROP FUNCTION svc_notify_jobs()');
}
