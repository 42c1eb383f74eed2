import { injectable } from '../../../core/di.ts';
import type { Db } from '../../../core/db/knex.ts';

/** The advisory lock of an org's running attempts: `(hashtext(LOCK), hashtext(org_id))`, for the rest of the transaction. */
const LOCK = 'job_attempts.running';

/**
 * The SQL of limits.org.running_attempts (RunningQuota holds the rule): per-org transaction-scoped
 * advisory locks, and an org's running attempts counted from `job_attempts_running_org`. A claimer
 * takes the org's lock and then counts in a later statement, so the count includes every attempt a
 * previous holder of the lock opened (it committed before the lock was free, and a statement's
 * snapshot is taken when the statement starts).
 */
@injectable()
export class RunningOrgs {
  /** Waits for the org's lock (the claim of one job, which takes it before any row lock). */
  async lock(orgId: string, trx: Db): Promise<void> {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?), hashtext(?))', [LOCK, orgId]);
  }

  /** Takes the locks that are free now and answers those orgs: batch claimers never wait for each other. */
  async tryLock(orgIds: string[], trx: Db): Promise<string[]> {
    if (!orgIds.length) return [];
    const { rows } = await trx.raw('SELECT o FROM unnest(?::text[]) AS o WHERE pg_try_advisory_xact_lock(hashtext(?), hashtext(o))', [orgIds, LOCK]);
    return rows.map((r: { o: string }) => r.o);
  }

  async count(orgId: string, trx: Db): Promise<number> {
    const { rows } = await trx.raw(`SELECT count(*)::int AS n FROM job_attempts WHERE status = 'running' AND org_id = ?`, [orgId]);
    return rows[0].n;
  }
}
