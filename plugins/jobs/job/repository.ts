import { randomBytes } from 'node:crypto';
import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { paginate, paginateMatches, type ListQuery } from '../../../core/http/lists.ts';
import type { Phase } from './schemas.ts';
import { drawUntilFree } from '../../../core/ids.ts';
import { Batcher } from '../../../core/batcher.ts';
import { Prepared } from '../../../core/db/prepared.ts';

/** Draws of a random root id before giving up (a collision of 8 hex digits is rare). */
export const ID_ATTEMPTS = 5;

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
  pull_request: PullRequestState | null;
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

/** A job's pull request on the code host, as opened and as its deliveries since told. */
export interface PullRequestState {
  number: number;
  url: string;
  /** open, closed or merged */
  state: string;
  head: string;
  base: string;
  /** approved, changes_requested or commented: the latest review the host reported, null before one. */
  review: string | null;
  opened_by: string;
  opened_at: string;
  updated_at: string;
}

/** The Job response shape: every column but the bookkeeping ones (child counter, env overrides, creator). */
export function toJob(r: JobRow) {
  const { child_count: _c, env_overrides: _e, created_by: _b, ...job } = r;
  return job;
}
export type Job = ReturnType<typeof toJob>;

export type EndingFacts = Pick<JobRow, 'id' | 'project_id' | 'parent_id' | 'title' | 'assignee' | 'env_name' | 'hints' | 'harness'>;

export interface JobFilters extends ListQuery {
  phase?: Phase;
  issue_type?: string;
  label?: string;
  assignee?: string;
  priority?: number;
  parent_id?: string;
  due_before?: string;
  q?: string;
  harness?: string;
  model?: string;
  created_after?: string;
  created_before?: string;
  closed_after?: string;
  closed_before?: string;
  /** Only this job (a job token sees its own job and no other). */
  only_id?: string;
}

@injectable()
export class JobRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  /**
   * Reads outside a transaction share statements: concurrent reads go out as one `id = ANY(…)`
   * (a statement's round trip and parsing cost more than its row). Each read's statement starts
   * after the read was asked, so it sees every write committed before.
   */
  private readonly reads = new Batcher<string, JobRow | undefined>(async (ids) => {
    // Not a prepared statement: its generic plan, made while the table is small, would keep a
    // sequential scan after the table has grown (until the next ANALYZE).
    const { rows } = await this.db.raw<{ rows: JobRow[] }>('SELECT * FROM jobs WHERE id = ANY(?)', [[...new Set(ids)]]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const handed = new Set<string>();
    // Callers of the same id each get their own row, as they would from statements of their own.
    return ids.map((id) => (handed.has(id) ? structuredClone(byId.get(id)) : (handed.add(id), byId.get(id))));
  });

  /** Hand-written, not built: knex's query building was a third of a job read's client-side CPU. */
  async byId(id: string, trx?: Db): Promise<JobRow | undefined> {
    if (!trx) return this.reads.submit(id);
    const { rows } = await trx.raw('SELECT * FROM jobs WHERE id = ? LIMIT 1', [id]);
    return rows[0];
  }

  /** Locks the row for the rest of the transaction (JobLifecycle changes phases under this lock). */
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
    if (f.harness) q.whereRaw(`jobs.harness->>'harness' = ?`, [f.harness]);
    if (f.model) q.whereRaw(`jobs.harness->>'model' = ?`, [f.model]);
    if (f.created_after) q.where('jobs.created_at', '>=', f.created_after);
    if (f.created_before) q.where('jobs.created_at', '<', f.created_before);
    if (f.closed_after) q.where('jobs.closed_at', '>=', f.closed_after);
    if (f.closed_before) q.where('jobs.closed_at', '<', f.closed_before);
    if (f.only_id) q.where('jobs.id', f.only_id);
    const words = f.q ? searchQuery(f.q) : null;
    if (!words) return paginate<JobRow, Job>(q, f, toJob, 'jobs');
    q.whereRaw(`to_tsvector('simple', jobs.title || ' ' || coalesce(jobs.description, '')) @@ to_tsquery('simple', ?)`, [words]);
    return paginateMatches<JobRow, Job>(q, f, toJob, 'jobs');
  }

  async insert(row: Partial<JobRow> & Pick<JobRow, 'id' | 'project_id' | 'title'>, trx: Db = this.db): Promise<JobRow> {
    const [created] = await trx('jobs').insert(serialize(row)).returning('*');
    return created;
  }

  /** A root job `{slug}-{8 hex digits}` in `trx`, drawing the id again while it is taken. */
  insertRoot(slug: string, row: Partial<JobRow> & Pick<JobRow, 'project_id' | 'title'>, trx: Db): Promise<JobRow> {
    return drawUntilFree({
      draws: ID_ATTEMPTS,
      attempt: async () => {
        const id = `${slug}-${randomBytes(4).toString('hex')}`;
        const [created] = await trx('jobs')
          .insert(serialize({ ...row, id }))
          .onConflict('id')
          .ignore()
          .returning('*');
        return created ?? null;
      },
      exhausted: () => new Error(`no free job id in project ${row.project_id} after ${ID_ATTEMPTS} draws`),
    });
  }

  /**
   * Root jobs in one autocommit statement, each with the id `{slug}-{suffix}` (the caller gives the
   * project's slug). The answer holds each input's row, or null where the id was taken. With
   * `notify`, the statement also NOTIFYs that channel once a row is written (delivered at its commit).
   */
  async insertRoots(rows: (NewRootJob & { slug: string })[], notify: string | null = null): Promise<(JobRow | null)[]> {
    const json = JSON.stringify(rows.map((r, i) => ({ ...r, i })));
    const created = await (notify ? INSERT_ROOTS_NOTIFYING.rows(this.db, [json, notify]) : INSERT_ROOTS.rows(this.db, [json]));
    const byKey = new Map(created.map((r) => [`${r.project_id} ${r.id.slice(r.id.lastIndexOf('-') + 1)}`, r]));
    return rows.map((r) => byKey.get(`${r.project_id} ${r.suffix}`) ?? null);
  }

  async lockMany(ids: string[], trx: Db): Promise<void> {
    if (ids.length) await trx.raw('SELECT id FROM jobs WHERE id = ANY(?) ORDER BY id FOR UPDATE', [ids]);
  }

  phasesOf(ids: string[], trx: Db): Promise<Pick<JobRow, 'id' | 'phase' | 'close_reason'>[]> {
    return trx('jobs').whereIn('id', ids).select('id', 'phase', 'close_reason');
  }

  async update(id: string, changes: Partial<JobRow>, trx: Db): Promise<JobRow> {
    const [row] = await trx('jobs')
      .where({ id })
      .update({ ...serialize(changes), updated_at: trx.fn.now() })
      .returning('*');
    return row;
  }

  /** The project's job whose pull request has this number, locked for the transaction. */
  lockByPullRequest(projectId: string, number: number, trx: Db): Promise<JobRow | undefined> {
    return trx('jobs').where('project_id', projectId).whereRaw(`(pull_request->>'number')::int = ?`, [number]).forUpdate().first();
  }

  /** What an attempt's ending tells others about its job. */
  endingFacts(id: string, trx: Db): Promise<EndingFacts> {
    return trx('jobs').where({ id }).first('id', 'project_id', 'parent_id', 'title', 'assignee', 'env_name', 'hints', 'harness');
  }

  /** How many jobs are in each phase, and how many ready ones are not deferred (the ready queue), in one statement over every project. */
  async phaseCounts(): Promise<{ phase: JobRow['phase']; jobs: number; ready_now: number }[]> {
    return this.db('jobs')
      .select('phase')
      .count({ jobs: '*' })
      .select(this.db.raw(`count(*) FILTER (WHERE phase = 'ready' AND (defer_until IS NULL OR defer_until <= now()))::int AS ready_now`))
      .groupBy('phase') as never;
  }

  /** The next child number of `parentId`, taken under the parent's row lock. */
  async nextChildNumber(parentId: string, trx: Db): Promise<number> {
    const [row] = await trx('jobs').where({ id: parentId }).increment('child_count', 1).returning('child_count');
    return row.child_count;
  }
}

/** The columns a new root job sets from its request, with their SQL types. */
const ROOT_COLUMN_TYPES = {
  title: 'text',
  description: 'text',
  issue_type: 'text',
  labels: 'text[]',
  phase: 'text',
  priority: 'smallint',
  assignee: 'text',
  review_required: 'text',
  hints: 'jsonb',
  git: 'jsonb',
  workspace: 'jsonb',
  env_name: 'text',
  execution_mode: 'text',
  harness: 'jsonb',
  env_overrides: 'jsonb',
  resource_refs: 'jsonb',
  defer_until: 'timestamptz',
  due_at: 'timestamptz',
  created_by: 'text',
} as const;
const ROOT_COLUMNS = Object.keys(ROOT_COLUMN_TYPES) as (keyof typeof ROOT_COLUMN_TYPES)[];

const INSERT_ROOTS_SQL = `INSERT INTO jobs (id, project_id, depth, ${ROOT_COLUMNS.join(', ')}, created_at, updated_at)
       SELECT r.slug || '-' || r.suffix, r.project_id, 0, ${ROOT_COLUMNS.map((c) => `r.${c}`).join(', ')}, clock_timestamp(), clock_timestamp()
       FROM jsonb_to_recordset(?::jsonb) AS r(i int, suffix text, slug text, project_id text, ${ROOT_COLUMNS.map((c) => `${c} ${ROOT_COLUMN_TYPES[c]}`).join(', ')})
       ORDER BY r.i
       ON CONFLICT (id) DO NOTHING
       RETURNING *`;
const INSERT_ROOTS = new Prepared<JobRow>('jobs_insert_roots', INSERT_ROOTS_SQL);
/** The same, and a NOTIFY when a row was written: the count makes the notice's CTE run (a CTE nobody reads would not). */
const INSERT_ROOTS_NOTIFYING = new Prepared<JobRow>(
  'jobs_insert_roots_notifying',
  `WITH inserted AS (${INSERT_ROOTS_SQL}),
       woken AS (SELECT pg_notify(?, '') FROM (SELECT 1 FROM inserted LIMIT 1) one)
     SELECT inserted.* FROM inserted, (SELECT count(*) FROM woken) heard`,
);

export type NewRootJob = Pick<JobRow, 'project_id' | (typeof ROOT_COLUMNS)[number]> & { suffix: string };

/** jsonb columns get JSON text: pg would send a JS array as a Postgres array. */
const JSON_COLUMNS = ['hints', 'git', 'resolved_git', 'pull_request', 'workspace', 'harness', 'env_overrides', 'resource_refs'] as const;
function serialize(row: Partial<JobRow>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...row };
  for (const c of JSON_COLUMNS) if (out[c] !== undefined && out[c] !== null) out[c] = JSON.stringify(out[c]);
  return out;
}

/**
 * A tsquery of the words of `text`, each matched as a word or the start of one (`fix:* & login:*`);
 * null when it holds no word. Only letters, digits, `_`, `.`, `-` and `/` survive, none of which
 * tsquery reads as an operator.
 */
export function searchQuery(text: string): string | null {
  // Dots, hyphens and slashes stay inside a word, so `app.ts` or `fix-login` is looked up as the index holds it.
  const words = text.toLowerCase().match(/[\p{L}\p{N}_][\p{L}\p{N}_.\-/]*/gu) ?? [];
  return words.length
    ? words
        .slice(0, 20)
        .map((w) => `${w}:*`)
        .join(' & ')
    : null;
}
