import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { PipelineFigures, PipelineStatistics } from '../../core/ports/stats.ts';

const FIGURES = `count(*) AS runs, count(*) FILTER (WHERE status = 'succeeded') AS succeeded, count(*) FILTER (WHERE status = 'failed') AS failed,
  count(*) FILTER (WHERE status IN ('succeeded', 'failed', 'cancelled')) AS finished,
  avg(extract(epoch FROM completed_at - started_at)) FILTER (WHERE status IN ('succeeded', 'failed', 'cancelled') AND started_at IS NOT NULL AND completed_at IS NOT NULL) AS avg_seconds`;

const figures = (row: Record<string, unknown>): PipelineFigures => {
  const finished = Number(row.finished);
  return {
    runs: Number(row.runs),
    succeeded: Number(row.succeeded),
    failed: Number(row.failed),
    success_rate: finished === 0 ? 0 : Math.round((Number(row.succeeded) / finished) * 10_000) / 10_000,
    avg_duration_seconds: row.avg_seconds === null ? 0 : Math.round(Number(row.avg_seconds) * 1000) / 1000,
  };
};

/** Run counts, success rates and durations for other domains (the PipelineStatistics port), over (project_id, created_at). */
@injectable()
export class PipelineStats implements PipelineStatistics {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  async summary(projectIds: string[], since: Date): Promise<PipelineFigures> {
    const { rows } = await this.db.raw(`SELECT ${FIGURES} FROM pipeline_runs WHERE project_id = ANY(?) AND created_at >= ?`, [projectIds, since]);
    return figures(rows[0]);
  }

  async byPipeline(projectIds: string[], since: Date): Promise<(PipelineFigures & { project_id: string; pipeline_name: string })[]> {
    const { rows } = await this.db.raw(
      `SELECT project_id, pipeline_name, ${FIGURES} FROM pipeline_runs WHERE project_id = ANY(?) AND created_at >= ?
       GROUP BY project_id, pipeline_name ORDER BY project_id, pipeline_name`,
      [projectIds, since],
    );
    return rows.map((r: Record<string, unknown>) => ({ project_id: r.project_id as string, pipeline_name: r.pipeline_name as string, ...figures(r) }));
  }
}
