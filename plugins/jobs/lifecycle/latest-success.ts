import type { Db } from '../../../core/db/knex.ts';

/**
 * Each job's latest attempt that succeeded with a `success` result (one row per job; a race's chosen
 * attempt before any other, docs/worker.md, "Rival attempts"): the attempt
 * whose resolved git the job takes and whose summary `system.job.completed` carries. Add the columns.
 */
export const latestSuccessfulAttempts = (db: Db, jobIds: string[]) =>
  db('job_attempts')
    .distinctOn('job_id')
    .where({ status: 'succeeded', result_status: 'success' })
    .whereIn('job_id', jobIds)
    .orderBy([{ column: 'job_id' }, { column: 'chosen', order: 'desc' }, { column: 'attempt_number', order: 'desc' }]);
