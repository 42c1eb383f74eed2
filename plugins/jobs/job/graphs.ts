import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import type { Creator } from '../../../core/ports/launchers.ts';
import type { GraphJob, JobGraphs } from '../../../core/ports/jobs.ts';
import { checkedRequest, JobCreation } from './create.ts';
import { JobRepository, toJob, type JobRow } from './repository.ts';
import { RelationRepository } from '../relations/relations.ts';
import { JobLifecycle } from '../lifecycle/lifecycle.ts';
import { isFinished } from '../relations/blockers.ts';
import { Invalid } from '../../../core/errors.ts';

/** The JobGraphs port: how other domains (pipeline runs) lay work out as jobs and control it. */
@injectable()
export class JobGraphService implements JobGraphs {
  constructor(
    @inject(JobCreation) private readonly creation: JobCreation,
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(RelationRepository) private readonly relations: RelationRepository,
    @inject(JobLifecycle) private readonly lifecycle: JobLifecycle,
    @inject(Tokens.Db) private readonly db: Db,
  ) {}

  /** A graph is new work: admitted as a job request is (an org over its monthly budget is refused before anything is written). */
  async create(creator: Creator, projectId: string, graph: GraphJob[], trx: Db): Promise<Map<string, string>> {
    await this.creation.admitInProject(projectId);
    const defaults = await this.creation.validDefaults(projectId);
    const slug = await this.creation.requireLiveProject(projectId, trx);
    const requests = graph.map(({ key, request }) => checkedRequest(defaults, request, `job '${key}'`));
    await this.creation.requirePushRemotes(projectId, requests, 'the jobs');
    await this.creation.requireRunnable(projectId, creator, requests, (i) => `job '${graph[i].key}'`);
    const ids = new Map<string, string>();
    for (const [i, { key }] of graph.entries()) {
      const row = this.creation.row(creator, projectId, requests[i], 0);
      const created = await this.jobs.insertRoot(slug, row, trx);
      this.lifecycle.created([created], trx);
      ids.set(key, created.id);
    }
    for (const { key, depends_on } of graph) {
      for (const dep of new Set(depends_on)) {
        const blocker = ids.get(dep);
        if (!blocker) throw new Invalid(`${key} depends on ${dep}, which is not part of the graph`);
        await this.relations.insert({ job_id: ids.get(key)!, related_job_id: blocker, relation_type: 'blocked_by' }, trx);
      }
    }
    return ids;
  }

  async cancel(jobIds: string[], reason: string, trx: Db): Promise<void> {
    for (const id of [...jobIds].sort()) {
      const job = await this.jobs.lock(id, trx);
      if (!job || isFinished(job.phase)) continue;
      const working = job.phase === 'active' || job.phase === 'review';
      const closed = working ? await this.lifecycle.cancelWork(job, reason, trx) : { phase: 'cancelled' as const, closed_at: new Date(), close_reason: reason };
      await this.lifecycle.change(id, closed, trx);
    }
  }

  async release(jobIds: string[], trx: Db): Promise<void> {
    for (const id of [...jobIds].sort()) {
      const job = await this.jobs.lock(id, trx);
      if (job?.phase === 'backlog') await this.lifecycle.change(id, { phase: 'ready' }, trx);
    }
  }

  lock(jobIds: string[], trx: Db): Promise<void> {
    return this.jobs.lockMany(jobIds, trx);
  }

  async phases(jobIds: string[], trx: Db): Promise<Map<string, { phase: JobRow['phase']; close_reason: string | null }>> {
    const rows = await this.jobs.phasesOf(jobIds, trx);
    return new Map(rows.map((r) => [r.id, { phase: r.phase, close_reason: r.close_reason }]));
  }

  async read(jobIds: string[]): Promise<Record<string, unknown>[]> {
    const rows: JobRow[] = await this.db('jobs').whereIn('id', jobIds);
    const byId = new Map(rows.map((r) => [r.id, r]));
    return jobIds.flatMap((id) => (byId.has(id) ? [toJob(byId.get(id)!)] : []));
  }
}
