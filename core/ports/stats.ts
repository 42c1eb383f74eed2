import type { InjectionToken } from 'tsyringe';

/**
 * Aggregates other domains read from the jobs and pipelines domains (analytics, spend, budgets),
 * so they never read those tables. Every figure covers the given projects only; `since` starts the
 * window (inclusive), the end is now.
 */

export interface JobCounts {
  /** Created in the window. */
  created: number;
  /** Closed done in the window. */
  completed: number;
  /** Closed in the window because an attempt failed. */
  failed: number;
  /** Running now (phase active), whatever the window. */
  active: number;
}

export type ProjectJobCounts = JobCounts & { project_id: string };
export interface DayJobCounts {
  day: string;
  created: number;
  completed: number;
  failed: number;
}

/** Costs of receipts written in a window. */
export interface SpendFigures {
  attempts: number;
  base_cost_usd: number;
  /** Sum of the receipts billed in the asked currency. */
  billed_cost: number;
  /** USD of receipts billed in another currency (no rate was in force, or the org's currency changed since). */
  unconverted_usd: number;
  /** Receipts with a model or compute without a price (partial or unpriced). */
  unpriced_attempts: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens: number;
}

export interface Spend {
  totals: SpendFigures;
  by_project: (SpendFigures & { project_id: string })[];
  by_model: (SpendFigures & { model: string })[];
  by_harness: (SpendFigures & { harness: string | null })[];
  by_day: (SpendFigures & { day: string })[];
}

/** One `llm.call` usage record, as billing reports it. */
export interface UsageRecord {
  project_id: string;
  job_id: string;
  attempt_id: string;
  model: string;
  provider: string | null;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens: number;
  duration_ms: number | null;
  created_at: Date;
}

export interface JobStatistics {
  counts(projectIds: string[], since: Date): Promise<JobCounts>;
  countsByProject(projectIds: string[], since: Date): Promise<ProjectJobCounts[]>;
  countsByDay(projectIds: string[], since: Date): Promise<DayJobCounts[]>;
  /** Receipts of the window; `currency`: the currency billed amounts are summed in. */
  spend(projectIds: string[], since: Date, currency: string): Promise<Spend>;
  /** Only the totals of `spend` (budget admission asks on every job creation). */
  spendTotals(projectIds: string[], since: Date, currency: string): Promise<SpendFigures>;
  /** The newest usage records of the window, at most `limit`. */
  usageRecords(projectIds: string[], since: Date, limit: number): Promise<UsageRecord[]>;
}

export interface PipelineFigures {
  runs: number;
  succeeded: number;
  failed: number;
  /** succeeded / (succeeded + failed + cancelled) of the runs that finished; 0 when none did. */
  success_rate: number;
  /** Mean of completed_at − started_at over the runs that finished; 0 when none did. */
  avg_duration_seconds: number;
}

export interface PipelineStatistics {
  /** Runs created in the window. */
  summary(projectIds: string[], since: Date): Promise<PipelineFigures>;
  byPipeline(projectIds: string[], since: Date): Promise<(PipelineFigures & { project_id: string; pipeline_name: string })[]>;
}

export const JobStatisticsToken = Symbol('JobStatistics') as InjectionToken<JobStatistics>;
export const PipelineStatisticsToken = Symbol('PipelineStatistics') as InjectionToken<PipelineStatistics>;
