import { inject, injectable } from '../../core/di.ts';
import { afterCommit } from '../../core/db/after-commit.ts';
import { ATTEMPT_BUCKETS, Metrics, sample } from '../../core/metrics.ts';
import type { AttemptCompletionListener } from '../../core/ports/attempts.ts';
import { JobRepository } from './job/repository.ts';
import { PHASES } from './job/schemas.ts';

/**
 * What the jobs domain tells /metrics: jobs by phase and the ready queue (one statement per scrape
 * window over its own table), claim rounds and hand-offs to the worker as the dispatcher does them,
 * and each attempt's duration by harness once its end commits.
 */
@injectable()
export class JobMetrics {
  /** One claim round (a claimNext statement batch) of the orchestrator's dispatcher. */
  readonly claim;
  /** Handing one claimed attempt to the worker dispatcher. */
  readonly dispatch;
  private readonly attempts;

  constructor(@inject(Metrics) metrics: Metrics, @inject(JobRepository) jobs: JobRepository) {
    this.claim = metrics.histogram('svc_job_claim_duration_seconds', 'Claim rounds of the orchestrator (one claimNext: pick and lease up to a batch)');
    this.dispatch = metrics.histogram('svc_job_dispatch_duration_seconds', 'Hand-offs of claimed attempts to a worker', ['outcome']);
    this.attempts = metrics.histogram('svc_attempt_duration_seconds', 'Ended attempts by harness and status', ['harness', 'status'], ATTEMPT_BUCKETS);
    const counts = sample(() => jobs.phaseCounts());
    metrics.sampledGauge('svc_jobs', 'Jobs by phase (all projects)', ['phase'], async () => {
      const rows = new Map((await counts()).map((r) => [r.phase, Number(r.jobs)]));
      return PHASES.map((phase) => ({ labels: { phase }, value: rows.get(phase) ?? 0 }));
    });
    metrics.sampledGauge('svc_ready_queue_depth', 'Ready jobs not deferred: what claimers can take now', [], async () => [
      { labels: {}, value: (await counts()).reduce((n, r) => n + Number(r.ready_now), 0) },
    ]);
  }

  /** The AttemptCompletionListener that times attempts: observed after the ending commits, never for a rolled-back one. */
  readonly attemptEnded: AttemptCompletionListener = async ({ job, attempt }, trx) => {
    const harness = typeof job.harness?.harness === 'string' ? job.harness.harness : 'default';
    const seconds = ((attempt.ended_at ?? new Date()).getTime() - attempt.started_at.getTime()) / 1000;
    afterCommit(trx, () => this.attempts.observe({ harness, status: attempt.status }, seconds));
  };
}
