import type { Db } from '../../../core/db/knex.ts';
import { dependentsSql, FINISHED_PHASES, isFinished } from '../relations/blockers.ts';
import type { JobRow } from '../job/repository.ts';
import { decideStepConditions } from './step-conditions.ts';
import { isWorkflowRoot, SKIPPED, type PhaseMover } from './roots.ts';

/** Every job that waits, directly or through others, for `jobId`. */
async function dependentsOf(trx: Db, jobId: string): Promise<string[]> {
  const { rows } = await trx.raw(
    `WITH RECURSIVE dependents(id) AS (
       SELECT ?::text
       UNION
       SELECT d.dependent_id FROM dependents JOIN LATERAL (${dependentsSql('dependents.id')}) d ON true
     )
     SELECT id FROM dependents WHERE id <> ? ORDER BY id`,
    [jobId, jobId],
  );
  return rows.map((r: { id: string }) => r.id);
}

/**
 * Called in the transaction that finished `child` (done or cancelled). A step that failed or was
 * cancelled fails its workflow root and cancels every step waiting for it; otherwise the root is
 * done once no step is unfinished.
 */
export async function rollUp(jobs: PhaseMover, child: JobRow, trx: Db): Promise<void> {
  if (!child.parent_id) return;
  const root = await jobs.lock(child.parent_id, trx);
  if (!root || !isWorkflowRoot(root) || isFinished(root.phase)) return;
  const closed_at = new Date();
  if (child.phase === 'cancelled' && child.close_reason !== SKIPPED) {
    const why = `step ${child.id} did not complete: ${child.close_reason ?? 'cancelled'}`;
    await jobs.change(root.id, { phase: 'cancelled', closed_at, close_reason: why }, trx);
    for (const id of await dependentsOf(trx, child.id)) {
      const step = await jobs.lock(id, trx);
      if (step && !isFinished(step.phase) && step.phase !== 'active' && step.phase !== 'review') {
        await jobs.change(id, { phase: 'cancelled', closed_at, close_reason: `step ${child.id} did not complete` }, trx);
      }
    }
    return;
  }
  await decideStepConditions(jobs, root, child, trx);
  const stillRoot = await jobs.lock(root.id, trx);
  if (!stillRoot || isFinished(stillRoot.phase)) return; // a skip above may have finished it
  const open = await trx('jobs').where({ parent_id: root.id }).whereNotIn('phase', FINISHED_PHASES).first('id');
  if (!open) await jobs.change(root.id, { phase: 'done', closed_at }, trx);
}
