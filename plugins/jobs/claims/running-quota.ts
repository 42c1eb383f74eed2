import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import type { Config } from '../../../core/config/schema.ts';
import { NotFound, QuotaExceeded } from '../../../core/errors.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../../core/ports/directory.ts';
import { JobRepository } from '../job/repository.ts';
import { RunningOrgs } from '../attempts/running-orgs.ts';

/** Projects whose org a process remembers before it starts over. */
const REMEMBERED = 100_000;

/**
 * limits.org.running_attempts: no attempt starts for an org that already runs that many. Every
 * attempt records its org (job_attempts.org_id); the org of a job's project comes from the
 * projects domain's port and is remembered for good (a project never changes org). Exact under
 * any number of claimers: a claimer holds the org's advisory lock (RunningOrgs) from before it
 * counts until its transaction ends. A batch claimer only tries the lock and leaves the org's jobs
 * ready when another claimer holds it; the claim of one job waits for it, taking it before the
 * job's row lock (a batch claimer never waits for an org lock, so the two orders cannot deadlock).
 */
@injectable()
export class RunningQuota {
  private readonly orgOf = new Map<string, string>();

  constructor(
    @inject(Tokens.Config) private readonly config: Config,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(RunningOrgs) private readonly orgs: RunningOrgs,
  ) {}

  get limit(): number {
    return this.config.limits.org.running_attempts;
  }

  /** The orgs of these projects (a project that no longer exists is left out). */
  async orgsOf(projectIds: string[], trx: Db): Promise<Map<string, string>> {
    const missing = [...new Set(projectIds.filter((id) => !this.orgOf.has(id)))];
    if (missing.length) {
      if (this.orgOf.size + missing.length > REMEMBERED) this.orgOf.clear();
      for (const p of await this.projects.byIds(missing, trx)) this.orgOf.set(p.id, p.org_id);
    }
    const found = new Map<string, string>();
    for (const id of projectIds) {
      const org = this.orgOf.get(id);
      if (org) found.set(id, org);
    }
    return found;
  }

  /** Those of the orgs whose lock was free (now held by `trx`). */
  tryLock(orgIds: string[], trx: Db): Promise<string[]> {
    return this.orgs.tryLock(orgIds, trx);
  }

  /**
   * The org of `jobId`, its lock held by `trx` (waited for). Call before locking the job's row.
   * The job's project is read without a lock: it never changes.
   */
  async lockOrgOf(jobId: string, trx: Db): Promise<string> {
    const job = await this.jobs.byId(jobId, trx);
    if (!job) throw new NotFound(`job ${jobId} not found`);
    const org = (await this.orgsOf([job.project_id], trx)).get(job.project_id);
    if (!org) throw new NotFound(`job ${jobId} not found`);
    await this.orgs.lock(org, trx);
    return org;
  }

  /** 429 naming the quota when the org (locked by `trx`, lockOrgOf) runs its quota already. */
  async requirePlace(orgId: string, trx: Db): Promise<void> {
    const count = await this.orgs.count(orgId, trx);
    if (count >= this.limit)
      throw new QuotaExceeded('too_many', `quota exceeded: org ${orgId} has ${count} running attempts (limits.org.running_attempts ${this.limit})`);
  }
}
