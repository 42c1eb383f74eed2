import type { Knex } from 'knex';

/**
 * A job's pull request (POST /jobs/{job_id}/pull-request): the code host's number, page, state and
 * review as they come back through its pull_request and pull_request_review deliveries, found by
 * project and number.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw('ALTER TABLE jobs ADD COLUMN pull_request jsonb');
  await db.raw(`CREATE INDEX jobs_pull_request_number ON jobs (project_id, ((pull_request->>'number')::int)) WHERE pull_request IS NOT NULL`);
}
