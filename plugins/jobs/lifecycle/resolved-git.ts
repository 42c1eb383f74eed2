import type { JobPhaseListener } from '../../../core/ports/jobs.ts';
import { latestSuccessfulAttempts } from './latest-success.ts';

/**
 * A job that reaches done or review after a successful attempt takes that attempt's resolved git
 * as its `resolved_git`, in the transaction that moved it.
 */
export const promoteResolvedGit: JobPhaseListener = async (jobs, trx) => {
  const ids = jobs.filter((j) => j.phase === 'done' || j.phase === 'review').map((j) => j.id);
  if (ids.length === 0) return;
  await trx.raw('UPDATE jobs j SET resolved_git = a.git FROM ? a WHERE j.id = a.job_id AND a.git IS NOT NULL', [
    latestSuccessfulAttempts(trx, ids).select('job_id', 'git'),
  ]);
};
