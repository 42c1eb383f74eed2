import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';
import type { Phase } from './schemas.ts';

export interface JobRow {
  id: string;
  project_id: string;
  parent_id: string | null;
  depth: number;
  child_count: number;
  title: string;
  description: string | null;
  issue_type: string;
  labels: string[];
  phase: Phase;
  priority: number;
  assignee: string | null;
  review_required: string;
  review_status: string | null;
  hints: Record<string, unknown>;
  git: Record<string, unknown> | null;
  resolved_git: Record<string, unknown> | null;
  workspace: Record<string, unknown> | null;
  env_name: string | null;
  execution_mode: string;
  harness: Record<string, unknown>;
  env_overrides: Record<string, string> | null;
  resource_refs: Record<string, unknown>[];
  defer_until: Date | null;
  due_at: Date | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
  closed_at: Date | null;
  close_reason: string | null;
}

/** The Job response shape: every column but the bookkeeping ones (child counter, env overrides, creator). */
export function toJob(r: JobRow) {
  const { child_count: _c, env_overrides: _e, created_by: _b, ...job } = r;
  return job;
}
export type Job = ReturnType<typeof toJob>;

export interface JobFilters extends ListQuery {
  phase?: Phase;
  issue_type?: string;
  label?: string;
  assignee?: string;
  priority?: number;
  parent_id?: string;
  due_before?: string;
}

@injectable()
export class JobRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  byId(id: string, trx: Db = this.db): Promise<JobRow | undefined> {
    return trx('jobs').where({ id }).first();
  }

  /** Locks the row for the rest of the transaction: every phase change goes through here. */
  lock(id: string, trx: Db): Promise<JobRow | undefined> {
    return trx('jobs').where({ id }).forUpdate().first();
  }

  list(projectId: string, f: JobFilters) {
    const q = this.db('jobs').where('jobs.project_id', projectId);
    if (f.phase) q.where('jobs.phase', f.phase);
    if (f.issue_type) q.where('jobs.issue_type', f.issue_type);
    if (f.label) q.whereRaw('jobs.labels @> ARRAY[?]::text[]', [f.label]);
    if (f.assignee) q.where('jobs.assignee', f.assignee);
    if (f.priority !== undefined) q.where('jobs.priority', f.priority);
    if (f.parent_id) q.where('jobs.parent_id', f.parent_id);
    if (f.due_before) q.where('jobs.due_at', '<', f.due_before);
    return paginate<JobRow, Job>(q, f, toJob, 'jobs');
  }

  async insert(row: Partial<JobRow> & Pick<JobRow, 'id' | 'project_id' | 'title'>, trx: Db = this.db): Promise<JobRow> {
    const [created] = await trx('jobs').insert(serialize(row)).returning('*');
    return created;
  }

  async update(id: string, changes: Partial<JobRow>, trx: Db = this.db): Promise<JobRow> {
    const [row] = await trx('jobs').where({ id }).update({ ...serialize(changes), updated_at: trx.fn.now() }).returning('*');
    return row;
  }

  /** The next child number of `parentId`, taken under the parent's row lock. */
  async nextChildNumber(parentId: string, trx: Db): Promise<number> {
    const [row] = await trx('jobs').where({ id: parentId }).increment('child_count', 1).returning('child_count');
    return row.child_count;
  }
}

/** jsonb columns get JSON text: pg would send a JS array as a Postgres array. */
const JSON_COLUMNS = ['hints', 'git', 'resolved_git', 'workspace', 'harness', 'env_overrides', 'resource_refs'] as const;
function serialize(row: Partial<JobRow>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...row };
  for (const c of JSON_COLUMNS) if (out[c] !== undefined && out[c] !== null) out[c] = JSON.stringify(out[c]);
  return out;
}
