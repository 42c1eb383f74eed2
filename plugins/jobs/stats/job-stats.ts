import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { windowDays } from '../../../core/http/windows.ts';
import type { DayJobCounts, JobCounts, JobStatistics, ProjectJobCounts, Spend, SpendFigures, UsageRecord } from '../../../core/ports/stats.ts';
import { roundToMicro } from '../../../domain/pricing/prices.ts';

/**
 * A job closed because an attempt failed (lifecycle's close reason for it: `attempt N failed (…): …`).
 * Written exactly as the partial index jobs_project_failed (021_billing) is, so the planner uses it, and as svc_job_day_rows (025) counts it.
 */
const FAILED = `phase = 'cancelled' AND close_reason LIKE 'attempt % failed%'`;
const DONE = `phase = 'done'`;

const TOKENS = ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'reasoning_tokens'] as const;

/** The figures of one group of receipts (`llm`, `base`, `billed`, `pricing` are columns of the `r` rows below). */
const FIGURES = `count(*) AS attempts, coalesce(sum(base), 0) AS base_cost_usd, coalesce(sum(billed), 0) AS billed_cost,
  coalesce(sum(base) FILTER (WHERE billed IS NULL), 0) AS unconverted_usd, count(*) FILTER (WHERE priced <> 'priced') AS unpriced_attempts,
  ${TOKENS.map((t) => `coalesce(sum((llm->>'${t}')::bigint), 0) AS ${t}`).join(', ')}`;

/** The receipts of the projects written since :since, with their cost in USD and (when billed in :currency) billed. */
const RECEIPTS = `SELECT j.project_id, j.harness->>'harness' AS harness, to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
    r.receipt->'llm' AS llm, r.receipt->'cost'->>'pricing' AS priced,
    (r.receipt->'cost'->>'base_cost_usd')::numeric AS base,
    CASE WHEN r.receipt->'cost'->'billed_cost'->>'currency' = :currency THEN (r.receipt->'cost'->'billed_cost'->>'amount')::numeric END AS billed
  FROM attempt_receipts r JOIN jobs j ON j.id = r.job_id
  WHERE j.project_id = ANY(:projects) AND r.created_at >= :since`;

const figures = (row: Record<string, unknown>): SpendFigures => ({
  attempts: Number(row.attempts),
  base_cost_usd: money(row.base_cost_usd),
  billed_cost: money(row.billed_cost),
  unconverted_usd: money(row.unconverted_usd),
  unpriced_attempts: Number(row.unpriced_attempts),
  ...(Object.fromEntries(TOKENS.map((t) => [t, Number(row[t])])) as Record<(typeof TOKENS)[number], number>),
});
const money = (v: unknown): number => roundToMicro(Number(v));

/** Counts and costs over jobs, attempts and receipts for other domains (the JobStatistics port). */
@injectable()
export class JobStats implements JobStatistics {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  /**
   * Jobs created, completed and failed per project and day of the window: whole days from the
   * daily rollup (job_day_counts, kept by triggers, 025_analytics_rollups), the window's partial
   * first day counted raw over (project_id, created_at) and the partial indexes of done and failed jobs.
   */
  private perDay(projectIds: string[], since: Date) {
    const { edge, edgeDay, firstDay } = windowDays(since);
    const edgeRows = (column: string, where: string, what: string) =>
      `SELECT project_id, CAST(:edgeDay AS date), ${what} FROM jobs WHERE project_id = ANY(:projects) AND ${where} AND ${column} >= :since AND ${column} < :edge`;
    return {
      sql: `SELECT project_id, day, created, completed, failed FROM job_day_counts WHERE project_id = ANY(:projects) AND day >= CAST(:firstDay AS date)
        UNION ALL ${edgeRows('created_at', 'true', '1, 0, 0')}
        UNION ALL ${edgeRows('closed_at', DONE, '0, 1, 0')}
        UNION ALL ${edgeRows('closed_at', FAILED, '0, 0, 1')}`,
      bindings: { projects: projectIds, since, edge, edgeDay, firstDay },
    };
  }

  /** The window's sums of the per-day rows, and the jobs running now (the partial index of active jobs). */
  async counts(projectIds: string[], since: Date): Promise<JobCounts> {
    const days = this.perDay(projectIds, since);
    const { rows } = await this.db.raw(
      `SELECT coalesce(sum(created), 0) AS created, coalesce(sum(completed), 0) AS completed, coalesce(sum(failed), 0) AS failed,
              (SELECT count(*) FROM jobs WHERE project_id = ANY(:projects) AND phase = 'active') AS active
       FROM (${days.sql}) d`,
      days.bindings,
    );
    const [r] = rows;
    return { created: Number(r.created), completed: Number(r.completed), failed: Number(r.failed), active: Number(r.active) };
  }

  /** Like counts, per project. */
  async countsByProject(projectIds: string[], since: Date): Promise<ProjectJobCounts[]> {
    if (projectIds.length === 0) return [];
    const days = this.perDay(projectIds, since);
    const { rows } = await this.db.raw(
      `WITH w AS (SELECT project_id, sum(created) AS created, sum(completed) AS completed, sum(failed) AS failed FROM (${days.sql}) d GROUP BY 1),
            a AS (SELECT project_id, count(*) AS n FROM jobs WHERE project_id = ANY(:projects) AND phase = 'active' GROUP BY 1)
       SELECT p.id AS project_id, coalesce(w.created, 0) AS created, coalesce(w.completed, 0) AS completed, coalesce(w.failed, 0) AS failed, coalesce(a.n, 0) AS active
       FROM unnest(CAST(:projects AS text[])) AS p(id) LEFT JOIN w ON w.project_id = p.id LEFT JOIN a ON a.project_id = p.id
       ORDER BY p.id`,
      days.bindings,
    );
    return rows.map((r: Record<string, unknown>) => ({
      project_id: r.project_id,
      created: Number(r.created),
      completed: Number(r.completed),
      failed: Number(r.failed),
      active: Number(r.active),
    }));
  }

  /** The days with anything created, completed or failed (a rollup row summing to zero is no day). */
  async countsByDay(projectIds: string[], since: Date): Promise<DayJobCounts[]> {
    if (projectIds.length === 0) return [];
    const days = this.perDay(projectIds, since);
    const { rows } = await this.db.raw(
      `SELECT to_char(day, 'YYYY-MM-DD') AS day, sum(created) AS created, sum(completed) AS completed, sum(failed) AS failed
       FROM (${days.sql}) d GROUP BY d.day HAVING sum(created) <> 0 OR sum(completed) <> 0 OR sum(failed) <> 0 ORDER BY d.day`,
      days.bindings,
    );
    return rows.map((r: Record<string, unknown>) => ({ day: r.day, created: Number(r.created), completed: Number(r.completed), failed: Number(r.failed) }));
  }

  async spendTotals(projectIds: string[], since: Date, currency: string): Promise<SpendFigures> {
    const { rows } = await this.db.raw(`SELECT ${FIGURES} FROM (${RECEIPTS}) r`, { projects: projectIds, since, currency });
    return figures(rows[0]);
  }

  /** Totals and the breakdowns by project, harness and day in one pass (grouping sets); models from each receipt's model section. */
  async spend(projectIds: string[], since: Date, currency: string): Promise<Spend> {
    const bindings = { projects: projectIds, since, currency };
    const { rows } = await this.db.raw(
      `SELECT grouping(project_id) AS gp, grouping(harness) AS gh, grouping(day) AS gd, project_id, harness, day, ${FIGURES}
       FROM (${RECEIPTS}) r GROUP BY GROUPING SETS ((), (project_id), (harness), (day)) ORDER BY project_id, harness, day`,
      bindings,
    );
    const models = await this.db.raw(
      `SELECT m.key AS model, count(*) AS attempts,
              coalesce(sum((m.value->>'cost_usd')::numeric), 0) AS base_cost_usd,
              coalesce(sum(CASE WHEN r.base > 0 THEN (m.value->>'cost_usd')::numeric * r.billed / r.base ELSE 0 END) FILTER (WHERE r.billed IS NOT NULL), 0) AS billed_cost,
              coalesce(sum((m.value->>'cost_usd')::numeric) FILTER (WHERE r.billed IS NULL), 0) AS unconverted_usd,
              count(*) FILTER (WHERE m.value->>'cost_usd' IS NULL) AS unpriced_attempts,
              ${TOKENS.map((t) => `coalesce(sum((m.value->>'${t}')::bigint), 0) AS ${t}`).join(', ')}
       FROM (${RECEIPTS}) r, jsonb_each(r.llm->'models') m GROUP BY m.key ORDER BY m.key`,
      bindings,
    );
    const of = (gp: number, gh: number, gd: number) =>
      rows.filter((r: Record<string, unknown>) => Number(r.gp) === gp && Number(r.gh) === gh && Number(r.gd) === gd);
    const [total] = of(1, 1, 1);
    return {
      totals: figures(total),
      by_project: of(0, 1, 1).map((r: Record<string, unknown>) => ({ project_id: r.project_id as string, ...figures(r) })),
      by_model: models.rows.map((r: Record<string, unknown>) => ({ model: r.model as string, ...figures(r) })),
      by_harness: of(1, 0, 1).map((r: Record<string, unknown>) => ({ harness: (r.harness as string | null) ?? null, ...figures(r) })),
      by_day: of(1, 1, 0).map((r: Record<string, unknown>) => ({ day: r.day as string, ...figures(r) })),
    };
  }

  async usageRecords(projectIds: string[], since: Date, limit: number): Promise<UsageRecord[]> {
    if (projectIds.length === 0) return [];
    return this.db('attempt_usage as u')
      .join('job_attempts as a', 'a.id', 'u.attempt_id')
      .join('jobs as j', 'j.id', 'a.job_id')
      .whereIn('j.project_id', projectIds)
      .where('u.created_at', '>=', since)
      .orderBy([
        { column: 'u.created_at', order: 'desc' },
        { column: 'u.id', order: 'desc' },
      ])
      .limit(limit)
      .select('j.project_id', 'a.job_id', 'u.attempt_id', 'u.model', 'u.provider', ...TOKENS.map((t) => `u.${t}`), 'u.duration_ms', 'u.created_at');
  }
}
