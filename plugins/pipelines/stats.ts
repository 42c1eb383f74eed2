import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { windowDays } from '../../core/http/windows.ts';
import type { PipelineFigures, PipelineStatistics } from '../../core/ports/stats.ts';

const FINISHED = `status IN ('succeeded', 'failed', 'cancelled')`;

/**
 * Per project, pipeline and day of creation: whole days of the window from the daily rollup
 * (pipeline_run_day_counts, kept by triggers, 025_analytics_rollups), the window's partial first
 * day raw from the covering index on (project_id, created_at).
 */
const PER_DAY = `SELECT project_id, pipeline_name, runs, succeeded, failed, finished, timed, duration_seconds
    FROM pipeline_run_day_counts WHERE project_id = ANY(:projects) AND day >= CAST(:firstDay AS date)
  UNION ALL
  SELECT project_id, pipeline_name, 1, (status = 'succeeded')::int, (status = 'failed')::int, (${FINISHED})::int,
         (${FINISHED} AND started_at IS NOT NULL AND completed_at IS NOT NULL)::int,
         CASE WHEN ${FINISHED} AND started_at IS NOT NULL AND completed_at IS NOT NULL THEN extract(epoch FROM completed_at - started_at) ELSE 0 END
    FROM pipeline_runs WHERE project_id = ANY(:projects) AND created_at >= :since AND created_at < :edge`;

const SUMS = `coalesce(sum(runs), 0) AS runs, coalesce(sum(succeeded), 0) AS succeeded, coalesce(sum(failed), 0) AS failed,
  coalesce(sum(finished), 0) AS finished, coalesce(sum(timed), 0) AS timed, coalesce(sum(duration_seconds), 0) AS duration_seconds`;

const figures = (row: Record<string, unknown>): PipelineFigures => {
  const finished = Number(row.finished);
  const timed = Number(row.timed);
  return {
    runs: Number(row.runs),
    succeeded: Number(row.succeeded),
    failed: Number(row.failed),
    success_rate: finished === 0 ? 0 : Math.round((Number(row.succeeded) / finished) * 10_000) / 10_000,
    avg_duration_seconds: timed === 0 ? 0 : Math.round((Number(row.duration_seconds) / timed) * 1000) / 1000,
  };
};

const bindings = (projectIds: string[], since: Date) => {
  const { edge, firstDay } = windowDays(since);
  return { projects: projectIds, since, edge, firstDay };
};

/** Run counts, success rates and durations of the runs created in a window, for other domains (the PipelineStatistics port). */
@injectable()
export class PipelineStats implements PipelineStatistics {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  async summary(projectIds: string[], since: Date): Promise<PipelineFigures> {
    const { rows } = await this.db.raw(`SELECT ${SUMS} FROM (${PER_DAY}) d`, bindings(projectIds, since));
    return figures(rows[0]);
  }

  /** A pipeline whose rollup rows sum to no run is left out. */
  async byPipeline(projectIds: string[], since: Date): Promise<(PipelineFigures & { project_id: string; pipeline_name: string })[]> {
    const { rows } = await this.db.raw(
      `SELECT project_id, pipeline_name, ${SUMS} FROM (${PER_DAY}) d GROUP BY project_id, pipeline_name HAVING sum(runs) <> 0
       ORDER BY project_id, pipeline_name`,
      bindings(projectIds, since),
    );
    return rows.map((r: Record<string, unknown>) => ({ project_id: r.project_id as string, pipeline_name: r.pipeline_name as string, ...figures(r) }));
  }
}
