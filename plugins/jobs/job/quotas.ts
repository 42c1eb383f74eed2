import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import type { Config } from '../../../core/config/schema.ts';
import type { JobPlace } from '../../../core/ports/jobs.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../../core/ports/directory.ts';
import { QuotaExceeded } from '../../../core/errors.ts';

/** A count under half the quota is trusted this long (plus what this process admitted since) before it is counted again. */
const FAR_MS = 1000;
const QUEUED = ['ready', 'backlog'];

interface Counted {
  count: number;
  at: number;
  /** Jobs this process admitted since the count. */
  since: number;
}

/**
 * limits.org.queued_jobs, the JobAdmission of every new job (a request, a workflow invocation, a
 * pipeline run's graph): an org with that many jobs waiting (phase ready or backlog) gets 429
 * naming the quota. Counted in PostgreSQL (every replica sees the same jobs), at most `limit` index
 * entries per count. Far from the quota (under half) a count is reused for FAR_MS, so the hot path
 * pays no query; passing the quota through that window would take more than half the quota in new
 * jobs of one org within a second. Near it every creation counts, so the overshoot is at most the
 * creations in flight at once (each counts before any of them is written), and a graph counts as one.
 */
@injectable()
export class QueuedJobQuota {
  private readonly counted = new Map<string, Counted>();

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
  ) {}

  readonly admit = async ({ orgId }: JobPlace): Promise<void> => {
    const limit = this.config.limits.org.queued_jobs;
    const now = Date.now();
    const known = this.counted.get(orgId);
    if (known && now - known.at < FAR_MS && known.count + known.since < limit / 2) {
      known.since += 1;
      return;
    }
    const count = await this.count(orgId, limit);
    if (this.counted.size > 10_000) this.counted.clear();
    this.counted.set(orgId, { count, at: now, since: 1 });
    if (count >= limit) throw new QuotaExceeded('too_many', `quota exceeded: org ${orgId} has ${count} queued jobs (limits.org.queued_jobs ${limit})`);
  };

  private async count(orgId: string, limit: number): Promise<number> {
    const projectIds = await this.projects.idsInOrg(orgId);
    if (!projectIds.length) return 0;
    const { rows } = await this.db.raw(`SELECT count(*)::int AS n FROM (SELECT 1 FROM jobs WHERE project_id = ANY(?) AND phase = ANY(?) LIMIT ?) q`, [
      projectIds,
      QUEUED,
      limit,
    ]);
    return rows[0].n as number;
  }
}
