import type { Knex } from 'knex';

/**
 * limits.org.running_attempts (docs/operations.md "Rate limits and quotas"): each attempt records
 * the org it runs for, set by the claimer when it opens the attempt (the org of the job's project
 * never changes), so an org's running attempts are counted from one partial index, however many
 * jobs the org has. Attempts running when this migration runs get their org from their project.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('job_attempts', (t) => {
    t.text('org_id');
  });
  await db.raw(`UPDATE job_attempts a SET org_id = p.org_id FROM jobs j JOIN projects p ON p.id = j.project_id WHERE j.id = a.job_id AND a.status = 'running'`);
  await db.raw(`CREATE INDEX job_attempts_running_org ON job_attempts (org_id) WHERE status = 'running'`);
}
