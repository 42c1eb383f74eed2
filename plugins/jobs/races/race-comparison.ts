import { inject, injectable } from '../../../core/di.ts';
import { NotFound } from '../../../core/errors.ts';
import { JobRepository } from '../job/repository.ts';
import { AttemptRepository, type AttemptRow } from '../attempts/attempts.ts';
import { AttemptComparison, type TokenTotals } from '../receipts/compare.ts';
import { DiffStore } from '../diffs/diff-store.ts';
import { RaceLaneRepository, type LaneRow, type Variant } from './race-lanes.ts';

export interface RaceEntry {
  attempt_number: number;
  race_lane: number;
  variant: Variant;
  status: AttemptRow['status'];
  result_status: AttemptRow['result_status'];
  result_summary: string | null;
  error: string | null;
  branch: string | null;
  pushed: boolean;
  chosen: boolean;
  started_at: Date;
  ended_at: Date | null;
  duration_ms: number | null;
  cost_usd: number;
  tokens: TokenTotals;
  diff: { files_total: number; additions: number; deletions: number; files: string[] } | null;
  check: Record<string, unknown> | null;
}
export interface RaceComparison {
  job_id: string;
  phase: string;
  check_command: string | null;
  chosen: number | null;
  lanes: Pick<LaneRow, 'lane' | 'variant' | 'status' | 'worker_losses'>[];
  attempts: RaceEntry[];
}

/**
 * A race's attempts side by side (docs/worker.md, "Rival attempts"): each with its variant, the figures the pairwise
 * comparison reads (AttemptComparison.side: duration, cost and tokens from the receipt, or the usage
 * so far while it runs), its diff's size and files, its result and its check's outcome.
 */
@injectable()
export class RaceComparisons {
  constructor(
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(AttemptRepository) private readonly attempts: AttemptRepository,
    @inject(RaceLaneRepository) private readonly lanes: RaceLaneRepository,
    @inject(AttemptComparison) private readonly comparison: AttemptComparison,
    @inject(DiffStore) private readonly diffs: DiffStore,
  ) {}

  async of(jobId: string): Promise<RaceComparison> {
    const [job, lanes, rows] = await Promise.all([this.jobs.byId(jobId), this.lanes.of(jobId), this.attempts.raced(jobId)]);
    if (!job) throw new NotFound(`job ${jobId} not found`);
    if (lanes.length === 0) throw new NotFound(`job ${jobId} was not raced (POST /jobs/${jobId}/attempts starts a race)`);
    const variantOf = new Map(lanes.map((l) => [l.lane, l.variant]));
    const attempts = await Promise.all(rows.map((row) => this.entry(jobId, row, variantOf.get(row.race_lane!) ?? {})));
    return {
      job_id: jobId,
      phase: job.phase,
      check_command: lanes[0].check_command,
      chosen: rows.find((r) => r.chosen)?.attempt_number ?? null,
      lanes: lanes.map(({ lane, variant, status, worker_losses }) => ({ lane, variant, status, worker_losses })),
      attempts,
    };
  }

  private async entry(jobId: string, row: AttemptRow, variant: Variant): Promise<RaceEntry> {
    const [side, diff] = await Promise.all([this.comparison.side(jobId, row.attempt_number), this.diffs.ofAttempt(row.id, false)]);
    const git = (row.git ?? {}) as { resolved_branch?: string | null; pushed?: boolean };
    return {
      attempt_number: row.attempt_number,
      race_lane: row.race_lane!,
      variant,
      status: row.status,
      result_status: row.result_status,
      result_summary: row.result_summary,
      error: row.error,
      branch: git.resolved_branch ?? null,
      pushed: git.pushed === true,
      chosen: row.chosen,
      started_at: row.started_at,
      ended_at: row.ended_at,
      duration_ms: side.duration_ms,
      cost_usd: side.cost_usd,
      tokens: side.tokens,
      diff: diff ? { files_total: diff.files_total, additions: diff.additions, deletions: diff.deletions, files: diff.files.map((f) => f.path) } : null,
      check: row.check_result,
    };
  }
}
