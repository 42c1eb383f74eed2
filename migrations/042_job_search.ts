import type { Knex } from 'knex';

/**
 * Server-side job search (GET /projects/{id}/jobs with q, harness, model and date filters): words of
 * the title and description through a full-text index (the 'simple' configuration: no language's
 * stemming, so identifiers and file names match as written), and the filters a console list combines
 * most, each with the project first and the list's order (newest first) behind it.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw(`CREATE INDEX jobs_search_text ON jobs USING gin (to_tsvector('simple', title || ' ' || coalesce(description, '')))`);
  await db.raw('CREATE INDEX jobs_search_phase ON jobs (project_id, phase, created_at)');
  await db.raw(`CREATE INDEX jobs_search_harness ON jobs (project_id, (harness->>'harness'), created_at)`);
  await db.raw(`CREATE INDEX jobs_search_model ON jobs (project_id, (harness->>'model'), created_at)`);
  await db.raw('CREATE INDEX jobs_search_assignee ON jobs (project_id, assignee, created_at) WHERE assignee IS NOT NULL');
  await db.raw('CREATE INDEX jobs_search_labels ON jobs USING gin (labels)');
}
