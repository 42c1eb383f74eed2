import type { Db } from '../../../core/db/knex.ts';
import { evaluateCondition } from '../../../domain/manifest/conditions.ts';
import { unfinishedBlockers } from '../relations/blockers.ts';
import type { JobRow } from '../job/repository.ts';
import { SKIPPED, type PhaseMover } from './roots.ts';

/** What `steps.<name>.status` reads: succeeded, failed, skipped, or pending for a step not finished. */
export type StepStatus = 'succeeded' | 'failed' | 'skipped' | 'pending';

const statusOf = (job: Pick<JobRow, 'phase' | 'close_reason'>): StepStatus =>
  job.phase === 'done' ? 'succeeded' : job.phase !== 'cancelled' ? 'pending' : job.close_reason === SKIPPED ? 'skipped' : 'failed';

/** Every step of a workflow root by name: its status and its last attempt's result_json. */
async function stepContext(trx: Db, rootId: string): Promise<Record<string, { status: StepStatus; result: unknown }>> {
  const { rows } = await trx.raw(
    `SELECT j.hints->>'step_name' AS name, j.phase, j.close_reason,
            (SELECT a.result_json FROM job_attempts a WHERE a.job_id = j.id ORDER BY a.attempt_number DESC LIMIT 1) AS result
     FROM jobs j WHERE j.parent_id = ? AND j.hints->>'step_name' IS NOT NULL`,
    [rootId],
  );
  return Object.fromEntries(
    rows.map((r: { name: string; phase: JobRow['phase']; close_reason: string | null; result: unknown }) => [
      r.name,
      { status: statusOf(r), result: r.result ?? null },
    ]),
  );
}

/** A JSON-encoded hint of the root (`request_json`, `event_json`), or `fallback`. */
const decoded = (root: JobRow, hint: string, fallback: unknown): unknown => {
  try {
    return typeof root.hints[hint] === 'string' ? JSON.parse(root.hints[hint] as string) : fallback;
  } catch {
    return fallback;
  }
};

/**
 * A step whose `if` reads earlier steps is decided once nothing it waits for is unfinished: in the
 * transaction that finished its last blocker, so no claimer sees it unblocked before. A false
 * condition closes it as skipped (which decides its own dependents in turn).
 */
export async function decideStepConditions(jobs: PhaseMover, root: JobRow, finished: JobRow | null, trx: Db): Promise<void> {
  const query = trx('jobs').where({ parent_id: root.id, phase: 'ready' }).whereRaw(`jsonb_typeof(hints->'step'->'if') = 'string'`);
  const waiting: JobRow[] = await (finished ? query.whereNot({ id: finished.id }) : query);
  if (waiting.length === 0) return;
  for (const step of waiting) {
    if ((await unfinishedBlockers(trx, step.id)).length > 0) continue;
    const locked = await jobs.lock(step.id, trx);
    if (locked?.phase !== 'ready') continue; // decided meanwhile, by a skip deciding its dependents
    // Read afresh for each step: deciding one may have skipped others.
    const context = { inputs: decoded(root, 'request_json', {}), event: decoded(root, 'event_json', null), steps: await stepContext(trx, root.id) };
    if (!evaluateCondition(String((locked.hints.step as { if: string }).if), context)) {
      await jobs.change(step.id, { phase: 'cancelled', closed_at: new Date(), close_reason: SKIPPED }, trx);
    }
  }
}
