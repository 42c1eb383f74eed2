import type { Db } from '../../../core/db/knex.ts';

/**
 * Who waits for whom. A relation row reads "{job_id} <relation_type> {related_job_id}":
 * - blocked_by, waits_for: job_id waits for related_job_id;
 * - blocks, conditional_blocks: related_job_id waits for job_id.
 * A blocker stops blocking once it is done or cancelled (cancelled jobs unblock downstream).
 */
export const WAITS_FOR_RELATED = ['blocked_by', 'waits_for'] as const;
export const RELATED_WAITS = ['blocks', 'conditional_blocks'] as const;
export const FINISHED_PHASES = ['done', 'cancelled'] as const;
export const isFinished = (phase: string): boolean => (FINISHED_PHASES as readonly string[]).includes(phase);

/** A constant list as SQL literals: the lists above are the only text the queries below put in. */
const sqlList = (values: readonly string[]) => values.map((v) => `'${v}'`).join(', ');
const WAITING = sqlList(WAITS_FOR_RELATED);
const WAITED_ON = sqlList(RELATED_WAITS);
const FINISHED = sqlList(FINISHED_PHASES);

/** SQL selecting `blocker_id` for every job that the job whose id is the SQL expression `jobId` waits for (finished or not). */
export const blockersSql = (jobId: string) => `
  SELECT related_job_id AS blocker_id FROM job_relations WHERE job_id = ${jobId} AND relation_type IN (${WAITING})
  UNION
  SELECT job_id AS blocker_id FROM job_relations WHERE related_job_id = ${jobId} AND relation_type IN (${WAITED_ON})`;

/** SQL selecting `blocker_id` for every job `?` waits for (finished or not); one bound parameter per `?`. */
export const BLOCKERS_SQL = blockersSql('?');

/** SQL selecting `dependent_id` for every job that waits for the job whose id is the SQL expression `jobId`. */
export const dependentsSql = (jobId: string) => `
  SELECT job_id AS dependent_id FROM job_relations WHERE related_job_id = ${jobId} AND relation_type IN (${WAITING})
  UNION
  SELECT related_job_id AS dependent_id FROM job_relations WHERE job_id = ${jobId} AND relation_type IN (${WAITED_ON})`;

/** SQL selecting `id` and `phase` of the jobs that the job whose id is the SQL expression `jobId` still waits for, by id. */
export const unfinishedBlockersSql = (jobId: string) => `
  SELECT j.id, j.phase FROM (${blockersSql(jobId)}) b JOIN jobs j ON j.id = b.blocker_id
  WHERE j.phase NOT IN (${FINISHED}) ORDER BY j.id`;

/** The jobs that `jobId` still waits for, with their phases, by id. */
export async function unfinishedBlockers(db: Db, jobId: string): Promise<{ id: string; phase: string }[]> {
  const { rows } = await db.raw(unfinishedBlockersSql('?'), [jobId, jobId]);
  return rows;
}

/**
 * A WHERE fragment for a claim scan over `jobs` aliased `alias`: true when nothing it waits for is
 * unfinished. Kept beside BLOCKERS_SQL so the claimer and the context endpoint agree.
 */
export const noUnfinishedBlockers = (alias: string) => `NOT EXISTS (
    SELECT 1 FROM job_relations r JOIN jobs b ON b.id = r.related_job_id
    WHERE r.job_id = ${alias}.id AND r.relation_type IN (${WAITING}) AND b.phase NOT IN (${FINISHED}))
  AND NOT EXISTS (
    SELECT 1 FROM job_relations r JOIN jobs b ON b.id = r.job_id
    WHERE r.related_job_id = ${alias}.id AND r.relation_type IN (${WAITED_ON}) AND b.phase NOT IN (${FINISHED}))`;
