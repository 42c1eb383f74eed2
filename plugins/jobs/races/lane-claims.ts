import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { QuotaExceeded } from '../../../core/errors.ts';
import { JobRepository, toJob } from '../job/repository.ts';
import { AttemptRepository } from '../attempts/attempts.ts';
import { RunningQuota } from '../claims/running-quota.ts';
import type { Claimed } from '../lifecycle/lifecycle.ts';
import { RaceLaneRepository } from './race-lanes.ts';

/** The claimer of race lanes (docs/worker.md, "Rival attempts"), beside the claimer of ready jobs in the orchestrator's dispatcher. */
@injectable()
export class LaneClaims {
  constructor(
    @inject(Tokens.ControlDb) private readonly db: Db,
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(AttemptRepository) private readonly attempts: AttemptRepository,
    @inject(RaceLaneRepository) private readonly lanes: RaceLaneRepository,
    @inject(RunningQuota) private readonly quota: RunningQuota,
  ) {}

  /**
   * Claims up to `limit` ready lanes for `owner`, each as a running attempt of its job with its own
   * lease (so heartbeats, completion and the reaper treat it as any attempt). Lanes and their jobs
   * are row-locked SKIP LOCKED and orgs' locks only tried, so claimers never wait for each other nor
   * for a job's other writers; the org's running-attempt quota holds as for any claim.
   */
  claim(owner: string, limit: number, leaseSeconds: number): Promise<Claimed[]> {
    return this.db.transaction(async (trx) => {
      const picks = await this.lanes.pick(limit, [], trx);
      if (picks.length === 0) return [];
      const orgOf = await this.quota.orgsOf(
        picks.map((p) => p.project_id),
        trx,
      );
      const locked = new Set(await this.quota.tryLock([...new Set(orgOf.values())], trx));
      const claimed: Claimed[] = [];
      for (const pick of picks) {
        const orgId = orgOf.get(pick.project_id);
        if (!orgId || !locked.has(orgId) || !(await this.hasPlace(orgId, trx))) continue;
        const attempt = await this.attempts.open(pick.job_id, orgId, owner, leaseSeconds, trx, pick.lane);
        await this.lanes.set(pick.job_id, pick.lane, 'running', trx);
        claimed.push({ job: toJob((await this.jobs.byId(pick.job_id, trx))!), attempt });
      }
      return claimed;
    });
  }

  private async hasPlace(orgId: string, trx: Db): Promise<boolean> {
    try {
      await this.quota.requirePlace(orgId, trx);
      return true;
    } catch (err) {
      if (err instanceof QuotaExceeded) return false;
      throw err;
    }
  }
}
