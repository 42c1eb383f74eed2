import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { unfinishedBlockers } from './blockers.ts';
import { JobRepository, toJob, type Job, type JobRow } from '../job/repository.ts';
import { JobRelations, type RelationView } from './relations.ts';
import { NotFound } from '../../../core/errors.ts';

/** Children `{parent}.{n}` in the order of n. */
const BY_CHILD_NUMBER = `substring(id from '[.]([0-9]+)$')::int`;

export interface AttemptSummary {
  id: string;
  attempt_number: number;
  status: string;
  result_status: string | null;
  result_summary: string | null;
  result_json: Record<string, unknown> | null;
  error: string | null;
  started_at: Date;
  ended_at: Date | null;
}

export interface JobContextView {
  job: Job;
  parent: Job | null;
  children: Job[];
  relations: { dependencies: RelationView[]; dependents: RelationView[]; blocking: RelationView[] };
  latest_attempt: AttemptSummary | null;
  latest_rejection_reason: string | null;
  blocked: boolean;
  waiting: boolean;
  effective_phase: string;
}

export interface JobTree {
  job: Job;
  children: JobTree[];
}

@injectable()
export class ContextRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  children(parentId: string, trx: Db = this.db): Promise<JobRow[]> {
    return trx('jobs').where({ parent_id: parentId }).orderByRaw(BY_CHILD_NUMBER);
  }

  /** Every job below `rootId`, parents before their children, siblings in child-number order. */
  async descendants(rootId: string, trx: Db = this.db): Promise<JobRow[]> {
    const { rows } = await trx.raw(
      `WITH RECURSIVE below AS (
         SELECT id FROM jobs WHERE parent_id = ?
         UNION ALL
         SELECT j.id FROM jobs j JOIN below b ON j.parent_id = b.id
       ) SELECT jobs.* FROM jobs JOIN below USING (id) ORDER BY depth, ${BY_CHILD_NUMBER}`,
      [rootId],
    );
    return rows;
  }

  latestAttempt(jobId: string, trx: Db = this.db): Promise<AttemptSummary | undefined> {
    return trx('job_attempts')
      .where({ job_id: jobId })
      .orderBy('attempt_number', 'desc')
      .first('id', 'attempt_number', 'status', 'result_status', 'result_summary', 'result_json', 'error', 'started_at', 'ended_at');
  }

  async latestRejectionReason(jobId: string, trx: Db = this.db): Promise<string | null> {
    const row = await trx('job_reviews')
      .where({ job_id: jobId, action: 'reject' })
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .first('text');
    return row?.text ?? null;
  }
}

/** The read models around one job: its context (spec "Job context") and its subtree. */
@injectable()
export class JobContext {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(JobRelations) private readonly relations: JobRelations,
    @inject(ContextRepository) private readonly reads: ContextRepository,
  ) {}

  /** One consistent snapshot: blocked is decided by blockers.ts, as the claimer decides it. */
  context(jobId: string): Promise<JobContextView> {
    return this.db.transaction(
      async (trx) => {
        const row = await this.existing(jobId, trx);
        // One connection: the reads run one after the other.
        const parent = row.parent_id ? await this.jobs.byId(row.parent_id, trx) : undefined;
        const children = await this.reads.children(jobId, trx);
        const around = await this.relations.around(jobId, trx);
        const unfinished = await unfinishedBlockers(trx, jobId);
        const attempt = await this.reads.latestAttempt(jobId, trx);
        const rejection = await this.reads.latestRejectionReason(jobId, trx);
        const blockerIds = new Set(unfinished.map((b) => b.id));
        const blocked = blockerIds.size > 0;
        const waiting = attempt?.result_status === 'waiting';
        return {
          job: toJob(row),
          parent: parent ? toJob(parent) : null,
          children: children.map(toJob),
          relations: { ...around, blocking: around.dependencies.filter((d) => blockerIds.has(d.related.id)) },
          latest_attempt: attempt ?? null,
          latest_rejection_reason: rejection,
          blocked,
          waiting,
          effective_phase: blocked ? 'blocked' : waiting ? 'waiting' : row.phase,
        };
      },
      { isolationLevel: 'repeatable read', readOnly: true },
    );
  }

  /** The job and all its descendants, nested, children in child-number order. */
  async tree(jobId: string): Promise<JobTree> {
    const root = await this.existing(jobId, this.db);
    const nodes = new Map<string, JobTree>([[root.id, { job: toJob(root), children: [] }]]);
    for (const row of await this.reads.descendants(jobId)) {
      const node: JobTree = { job: toJob(row), children: [] };
      nodes.set(row.id, node);
      nodes.get(row.parent_id!)!.children.push(node);
    }
    return nodes.get(root.id)!;
  }

  private async existing(jobId: string, trx: Db): Promise<JobRow> {
    const row = await this.jobs.byId(jobId, trx);
    if (!row) throw new NotFound(`job ${jobId} not found`);
    return row;
  }
}
