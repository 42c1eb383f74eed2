import type { Db } from '../../../core/db/knex.ts';
import { Conflict } from '../../../core/errors.ts';
import type { JobRow } from '../job/repository.ts';

/**
 * Workflow roots: a root job made by a workflow (`hints.workflow_name`) whose steps are its child
 * jobs. It is never claimed; it is done when every step is, and a failed step fails it.
 * A step closed with the reason `skipped` (its `if` was false) counts as complete.
 */
export const SKIPPED = 'skipped';

export const isWorkflowRoot = (job: Pick<JobRow, 'depth' | 'child_count' | 'hints'>): boolean =>
  job.depth === 0 && job.child_count > 0 && typeof job.hints?.workflow_name === 'string';

/** The same test as SQL over `jobs` aliased `alias`, for the claim scan. */
export const isWorkflowRootSql = (alias: string) =>
  `(${alias}.depth = 0 AND ${alias}.child_count > 0 AND jsonb_typeof(${alias}.hints->'workflow_name') = 'string')`;

export function refuseWorkflowRootClaim(job: JobRow): void {
  if (isWorkflowRoot(job)) throw new Conflict(`job ${job.id} is the root of workflow ${job.hints.workflow_name}: it completes when its steps do`);
}

/**
 * How the workflow rules move jobs: through the job lifecycle (lifecycle/lifecycle.ts), which
 * implements this, so a step or root they finish gets the same follow-ups as any other.
 */
export interface PhaseMover {
  /** The job row, locked for the rest of the transaction. */
  lock(id: string, trx: Db): Promise<JobRow | undefined>;
  change(id: string, changes: Partial<JobRow>, trx: Db): Promise<JobRow>;
}
