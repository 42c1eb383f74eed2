import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { JobRepository, toJob, type Job, type JobFilters, type JobRow } from './repository.ts';
import type { Phase } from './schemas.ts';
import { JobLifecycle } from '../lifecycle/lifecycle.ts';
import { JobRequestChecks } from '../../../core/ports/jobs.ts';
import { BadRequest, Conflict, NotFound } from '../../../core/errors.ts';
import { HarnessCheck } from './harness-check.ts';
import { ReceiptStore } from '../receipts/receipt-store.ts';

/** Phases a person may move a job between with PATCH; active, review and done are reached by the work itself. */
const PLANNING: Phase[] = ['idea', 'backlog', 'ready'];

export type JobChanges = Partial<
  Pick<JobRow, 'title' | 'description' | 'issue_type' | 'labels' | 'priority' | 'assignee' | 'review_required' | 'env_name' | 'close_reason'>
> & {
  hints?: Record<string, unknown>;
  defer_until?: string | null;
  due_at?: string | null;
  phase?: Phase;
};

@injectable()
export class JobService {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(JobLifecycle) private readonly lifecycle: JobLifecycle,
    @inject(JobRequestChecks) private readonly requestChecks: JobRequestChecks,
    @inject(HarnessCheck) private readonly harnesses: HarnessCheck,
    @inject(ReceiptStore) private readonly receipts: ReceiptStore,
  ) {}

  async get(id: string): Promise<Job> {
    const row = await this.jobs.byId(id);
    if (!row) throw new NotFound(`job ${id} not found`);
    return toJob(row);
  }

  /** A page of the project's jobs; with `include_figures`, each with what its ended attempts cost and took. */
  async list(projectId: string, filters: JobFilters & { include_figures?: boolean }) {
    const page = await this.jobs.list(projectId, filters);
    if (!filters.include_figures) return page;
    const figures = await this.receipts.figuresOfJobs(page.data.map((j) => j.id));
    return { ...page, data: page.data.map((j) => ({ ...j, figures: figures.get(j.id) ?? { attempts: 0, cost_usd: 0, duration_ms: 0 } })) };
  }

  /** Field changes, the planning moves (idea, backlog, ready, cancelling from them), and cancelling work under way (active, review). */
  async update(id: string, changes: JobChanges): Promise<Job> {
    return this.db.transaction(async (trx) => {
      const job = (await this.jobs.lock(id, trx))!;
      const { phase, hints, defer_until, due_at, ...fields } = changes;
      const patch: Partial<JobRow> = { ...fields };
      if (hints) await this.requestChecks.check(job.project_id, { hints });
      if (hints) patch.hints = { ...job.hints, ...hints };
      if (defer_until !== undefined) patch.defer_until = defer_until ? new Date(defer_until) : null;
      if (due_at !== undefined) patch.due_at = due_at ? new Date(due_at) : null;
      if (changes.close_reason !== undefined && phase !== 'cancelled') throw new BadRequest('"close_reason" goes with phase cancelled');
      // Planned work becoming runnable: its harness must be one a worker can run, as at create.
      if (phase === 'ready' && job.phase !== 'ready' && PLANNING.includes(job.phase)) {
        const ctx = { projectId: job.project_id, userId: job.created_by };
        await this.harnesses.require(job.project_id, [{ ...job.harness, hints: patch.hints ?? job.hints }], ctx);
      }
      if (phase === 'cancelled' && (job.phase === 'active' || job.phase === 'review'))
        Object.assign(patch, await this.lifecycle.cancelWork(job, changes.close_reason ?? undefined, trx));
      else if (phase && phase !== job.phase) Object.assign(patch, planningMove(job, phase, changes.close_reason ?? undefined));
      return toJob(await this.lifecycle.change(id, patch, trx));
    });
  }
}

function planningMove(job: JobRow, to: Phase, reason: string | undefined): Partial<JobRow> {
  const movable = PLANNING.includes(job.phase);
  if (movable && PLANNING.includes(to)) return { phase: to };
  if (movable && to === 'cancelled') return { phase: 'cancelled', closed_at: new Date(), close_reason: reason ?? 'cancelled' };
  throw new Conflict(`job ${job.id} is ${job.phase}: it cannot move to ${to} this way`);
}
