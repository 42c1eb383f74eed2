import { ATTEMPT_BUCKETS, sample, type Metrics } from '../metrics.ts';
import type { WorkRepository } from './repository.ts';

export type WorkOutcome = 'done' | 'cancelled' | 'retried' | 'dead' | 'lease_lost';

/** The work engine's metrics per queue (GET /metrics): claims, ends by outcome, reaped leases, run times, items by status. */
export class WorkMetrics {
  private readonly claims;
  private readonly waits;
  private readonly ends;
  private readonly runs;
  private readonly reaps;

  constructor(metrics: Metrics, repo: WorkRepository) {
    this.claims = metrics.counter('svc_work_claimed_total', 'Work items claimed, per queue', ['queue']);
    this.waits = metrics.histogram('svc_work_claim_wait_seconds', 'From an item being due to its claim, per queue', ['queue']);
    this.ends = metrics.counter('svc_work_ended_total', 'Attempts at work items ended, per queue and outcome (done, cancelled, retried, dead, lease_lost)', [
      'queue',
      'outcome',
    ]);
    this.runs = metrics.histogram('svc_work_run_seconds', 'How long an attempt at a work item ran, per queue', ['queue'], ATTEMPT_BUCKETS);
    this.reaps = metrics.counter('svc_work_reaped_total', 'Expired leases freed by the reaper, per queue and what became of the item (retried, dead)', [
      'queue',
      'outcome',
    ]);
    const counts = sample(() => repo.counts());
    metrics.sampledGauge('svc_work_items', 'Work items per queue and status (queued, running, dead)', ['queue', 'status'], async () =>
      (await counts()).map((c) => ({ labels: { queue: c.queue, status: c.status }, value: c.n })),
    );
  }

  claimed(queue: string, waitSeconds: number): void {
    this.claims.inc({ queue });
    this.waits.observe({ queue }, Math.max(0, waitSeconds));
  }

  ended(queue: string, outcome: WorkOutcome, seconds: number): void {
    this.ends.inc({ queue, outcome });
    this.runs.observe({ queue }, seconds);
  }

  reaped(queue: string, outcome: WorkOutcome): void {
    this.reaps.inc({ queue, outcome });
  }
}
