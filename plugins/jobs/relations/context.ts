import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { unfinishedBlockersSql } from './blockers.ts';
import { JobRepository, toJob, type Job, type JobRow } from '../job/repository.ts';
import { aroundOf, touchingSql, type RelationView, type TouchingRow } from './relations.ts';
import { NotFound } from '../../../core/errors.ts';

/** Children `{parent}.{n}` in the order of n. */
const BY_CHILD_NUMBER = `substring(id from '[.]([0-9]+)$')::int`;
const ATTEMPT_SUMMARY = ['id', 'attempt_number', 'status', 'result_status', 'result_summary', 'result_json', 'error', 'git', 'started_at', 'ended_at'];

/** The timestamps of the rows the context reads as JSON: ISO text there, Dates as every other read gives them. */
const JOB_TIMES = ['defer_until', 'due_at', 'created_at', 'updated_at', 'closed_at'] as const;
const ATTEMPT_TIMES = ['started_at', 'ended_at'] as const;
const RELATION_TIMES = ['created_at'] as const;

function withDates<T>(row: T, fields: readonly string[]): T {
  const r = row as Record<string, unknown>;
  for (const f of fields) if (typeof r[f] === 'string') r[f] = new Date(r[f]);
  return row;
}

/** A job's row and what its context is made of, read at once. */
export interface ContextRows {
  row: JobRow;
  parent: JobRow | null;
  children: JobRow[];
  touching: TouchingRow[];
  unfinished: string[];
  attempt: AttemptSummary | null;
  rejection: string | null;
}

export interface AttemptSummary {
  id: string;
  attempt_number: number;
  status: string;
  result_status: string | null;
  result_summary: string | null;
  result_json: Record<string, unknown> | null;
  error: string | null;
  /** The attempt's resolved git metadata: commits, pushed, or the changes left uncommitted and why. */
  git: Record<string, unknown> | null;
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

  /**
   * The job's row and everything around it in one statement, so one snapshot without a transaction:
   * the row as columns, the rest as JSON (parent, children in child-number order, the relations with
   * the job at their other end, the ids of the unfinished blockers, the latest attempt, the latest
   * rejection's text). Blockers and relations are blockers.ts's and relations.ts's SQL.
   */
  async contextRows(jobId: string): Promise<ContextRows | undefined> {
    const { rows } = await this.db.raw(
      `SELECT j.*,
         (SELECT to_json(p) FROM jobs p WHERE p.id = j.parent_id) AS "ctx:parent",
         (SELECT coalesce(json_agg(to_json(c) ORDER BY ${BY_CHILD_NUMBER}), '[]') FROM jobs c WHERE c.parent_id = j.id) AS "ctx:children",
         (SELECT coalesce(json_agg(to_json(t) ORDER BY t.created_at, t.other_id), '[]') FROM (${touchingSql('j.id')}) t) AS "ctx:touching",
         (SELECT coalesce(json_agg(u.id ORDER BY u.id), '[]') FROM (${unfinishedBlockersSql('j.id')}) u) AS "ctx:unfinished",
         (SELECT to_json(a) FROM (SELECT ${ATTEMPT_SUMMARY.join(', ')} FROM job_attempts WHERE job_id = j.id ORDER BY attempt_number DESC LIMIT 1) a) AS "ctx:attempt",
         (SELECT text FROM job_reviews WHERE job_id = j.id AND action = 'reject' ORDER BY created_at DESC, id DESC LIMIT 1) AS "ctx:rejection"
       FROM jobs j WHERE j.id = ?`,
      [jobId],
    );
    if (!rows[0]) return undefined;
    const {
      'ctx:parent': parent,
      'ctx:children': children,
      'ctx:touching': touching,
      'ctx:unfinished': unfinished,
      'ctx:attempt': attempt,
      'ctx:rejection': rejection,
      ...row
    } = rows[0];
    return {
      row,
      parent: parent ? withDates(parent, JOB_TIMES) : null,
      children: children.map((c: JobRow) => withDates(c, JOB_TIMES)),
      touching: touching.map((t: TouchingRow) => withDates(t, RELATION_TIMES)),
      unfinished,
      attempt: attempt ? withDates(attempt, ATTEMPT_TIMES) : null,
      rejection,
    };
  }
}

/** The read models around one job: its context (spec "Job context") and its subtree. */
@injectable()
export class JobContext {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(ContextRepository) private readonly reads: ContextRepository,
  ) {}

  /** One consistent snapshot (one statement): blocked is decided by blockers.ts, as the claimer decides it. */
  async context(jobId: string): Promise<JobContextView> {
    const read = await this.reads.contextRows(jobId);
    if (!read) throw new NotFound(`job ${jobId} not found`);
    const { row, parent, children, touching, unfinished, attempt, rejection } = read;
    const around = aroundOf(jobId, touching);
    const blockerIds = new Set(unfinished);
    const blocked = blockerIds.size > 0;
    const waiting = attempt?.result_status === 'waiting';
    return {
      job: toJob(row),
      parent: parent ? toJob(parent) : null,
      children: children.map(toJob),
      relations: { ...around, blocking: around.dependencies.filter((d) => blockerIds.has(d.related.id)) },
      latest_attempt: attempt,
      latest_rejection_reason: rejection,
      blocked,
      waiting,
      effective_phase: blocked ? 'blocked' : waiting ? 'waiting' : row.phase,
    };
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
