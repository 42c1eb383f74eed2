import type { Db } from '../../../core/db/knex.ts';
import type { RunStep } from '../../../core/ports/attempts.ts';
import { FINISHED_PHASES } from '../relations/blockers.ts';

/** The run a step job belongs to: its pipeline run, else its workflow root (the root itself for a single-step workflow). */
export function runIdOf(job: { id: string; parent_id: string | null; hints: Record<string, unknown> }): string | null {
  if (typeof job.hints.pipeline_run_id === 'string') return job.hints.pipeline_run_id;
  if (typeof job.hints.workflow_name === 'string' && typeof job.hints.step_name === 'string') return job.parent_id ?? job.id;
  return null;
}

/**
 * The finished steps of the run `job` belongs to (not the job itself): name, what it depends on, its
 * phase, and its latest attempt's result, summary and git. Empty for a job outside a run.
 */
export async function finishedRunSteps(
  db: Db,
  job: { id: string; project_id: string; parent_id: string | null; hints: Record<string, unknown> },
): Promise<RunStep[]> {
  const runId = runIdOf(job);
  if (!runId || runId === job.id) return [];
  const query = db('jobs as j')
    .where('j.project_id', job.project_id)
    .whereNot('j.id', job.id)
    .whereIn('j.phase', FINISHED_PHASES)
    .whereRaw(`j.hints->>'step_name' IS NOT NULL`)
    .select(
      db.raw(`j.hints->>'step_name' AS name`),
      db.raw(`COALESCE(j.hints->'depends_on', '[]'::jsonb) AS depends_on`),
      'j.id as job_id',
      'j.phase',
      'j.close_reason',
      db.raw(
        `(SELECT row_to_json(a) FROM (SELECT result_status, result_json, result_summary, git FROM job_attempts WHERE job_id = j.id ORDER BY attempt_number DESC LIMIT 1) a) AS attempt`,
      ),
    );
  if (typeof job.hints.pipeline_run_id === 'string') query.whereRaw(`j.hints->>'pipeline_run_id' = ?`, [runId]);
  else query.where('j.parent_id', runId);
  const rows: { name: string; depends_on: string[]; job_id: string; phase: string; close_reason: string | null; attempt: RunStep['attempt'] }[] = await query;
  return rows.map((r) => ({ ...r, depends_on: Array.isArray(r.depends_on) ? r.depends_on : [] }));
}
