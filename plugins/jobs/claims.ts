import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { refuseWorkflowRootClaim } from './rollup.ts';
import { JobRepository, toJob, type Job, type JobRow } from './repository.ts';
import { unfinishedBlockers } from './blockers.ts';
import { emitJobFailed, type Failure } from './system-events.ts';
import { AttemptRepository, toAttempt, type Attempt, type AttemptEnding, type AttemptRow, type ClaimedAttempt, type ResultStatus } from './attempts.ts';

export const DEFAULT_LEASE_SECONDS = 300;
export const MAX_LEASE_SECONDS = 86_400;
/** A `waiting` result returns the job to ready with this pause, unless unfinished blockers hold it back anyway. */
export const WAITING_BACKOFF_SECONDS = 30;
/** Without `hints.max_attempts` a job gets one attempt: the first failure cancels it. */
export const DEFAULT_MAX_ATTEMPTS = 1;

export interface Claimed {
  job: Job;
  attempt: ClaimedAttempt;
}
export interface AttemptOutcome {
  job: Job;
  attempt: Attempt;
}
export interface ClaimOptions {
  leaseSeconds?: number;
  /** claimNext leaves jobs of these worker types (`hints.worker_type`, 'default' without one) ready: their workers are full. */
  skipWorkerTypes?: string[];
}
/** The `svc` object of a harness's json-result block. */
export interface AttemptResult {
  status: ResultStatus;
  summary?: string;
  reason?: string;
}
export interface Completion {
  lease_token: string;
  result: AttemptResult;
  result_json?: Record<string, unknown>;
  error?: string;
  /** A failed result that is not retried whatever `max_attempts` allows. */
  final?: boolean;
}
export interface Reaped {
  job_id: string;
  attempt_id: string;
  phase: JobRow['phase'];
}

/** 409 for gate contention; the body names the keys held by other jobs and the job that wanted them. */
export function gateContention(jobId: string, heldKeys: string[]): Boom.Boom {
  const err = Boom.conflict(`job ${jobId} waits for gates held by other jobs: ${heldKeys.join(', ')}`);
  Object.assign(err.output.payload, { blocked_on_gates: heldKeys, jobId });
  return err;
}
const isGateContention = (e: unknown): boolean => Boom.isBoom(e) && 'blocked_on_gates' in e.output.payload;

function leaseLost(attempt: AttemptRow, why: string): Boom.Boom {
  return Boom.conflict(`lease lost: attempt ${attempt.attempt_number} (${attempt.id}) of job ${attempt.job_id}: ${why}`);
}

/**
 * The claimer and the life of an attempt: claim (one job or a batch), heartbeat, release,
 * complete, reaping of expired leases, and the end of the work when a job is cancelled.
 * Every phase change runs in a transaction after `JobRepository.lock` on the job.
 */
@injectable()
export class Claims {
  constructor(
    @inject(Tokens.ControlDb) private readonly db: Db, // claims and heartbeats are not starved by a pile-up of reads
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(AttemptRepository) private readonly attempts: AttemptRepository,
  ) {}

  /** Claims one ready job: not deferred, nothing unfinished it waits for, every gate free. */
  claim(jobId: string, owner: string, { leaseSeconds = DEFAULT_LEASE_SECONDS }: ClaimOptions = {}): Promise<Claimed> {
    return this.db.transaction(async (trx) => {
      const job = await this.locked(jobId, trx);
      if (job.phase !== 'ready') throw Boom.conflict(`job ${jobId} is ${job.phase}: only a ready job can be claimed`);
      if (job.defer_until && job.defer_until > new Date()) throw Boom.conflict(`job ${jobId} is deferred until ${job.defer_until.toISOString()}`);
      refuseWorkflowRootClaim(job);
      await this.requireUnblocked(job, trx);
      return this.start(job, owner, leaseSeconds, trx);
    });
  }

  /**
   * Claims up to `limit` jobs for `owner` in priority then age order, skipping rows other claimers
   * hold (SKIP LOCKED) and jobs whose gates are taken; safe with any number of concurrent callers.
   * Each round is one statement (AttemptRepository.claimBatch) that picks the next jobs in claim
   * order and claims the gate-less ones at once; gated ones among them then go one by one through
   * `start` (advisory locks, job_gates) in a savepoint each. Gated and gate-less jobs compete for the
   * same picks in the same order, so priority order holds across both; the one trade-off: a gated
   * job that loses its gate to another claimer leaves its slot to the next round's picks.
   */
  claimNext(owner: string, limit: number, { leaseSeconds = DEFAULT_LEASE_SECONDS, skipWorkerTypes = [] }: ClaimOptions = {}): Promise<Claimed[]> {
    return this.db.transaction(async (trx) => {
      const claimed: Claimed[] = [];
      const passed: string[] = [];
      while (claimed.length < limit) {
        const wanted = limit - claimed.length;
        const picks = await this.attempts.claimBatch(owner, wanted, leaseSeconds, passed, trx, skipWorkerTypes);
        await this.jobs.phasesChanged(picks.filter((p) => p.attempt).map((p) => p.job), trx);
        for (const { job, attempt } of picks) {
          passed.push(job.id);
          if (attempt) claimed.push({ job: toJob(job), attempt });
          else {
            // A savepoint: a gate taken meanwhile undoes this job's attempt only.
            const result = await trx.transaction((sp) => this.start(job, owner, leaseSeconds, sp)).catch((e) => {
              if (isGateContention(e)) return null;
              throw e;
            });
            if (result) claimed.push(result);
          }
        }
        if (picks.length < wanted) break;
      }
      return claimed;
    });
  }

  /**
   * Opens a running attempt with a lease for `owner`, takes the job's gates and makes the job
   * active (plus `changes`). The caller holds the job's row lock and has checked phase and blockers.
   */
  async start(job: JobRow, owner: string, leaseSeconds: number, trx: Db, changes: Partial<JobRow> = {}): Promise<Claimed> {
    const attempt = await this.attempts.open(job.id, owner, leaseSeconds, trx);
    const held = await this.attempts.acquireGates(job, attempt.id, trx);
    if (held.length) throw gateContention(job.id, held);
    const active = await this.jobs.update(job.id, { phase: 'active', assignee: owner, ...changes }, trx);
    return { job: toJob(active), attempt };
  }

  /** The claimer gives the job back: its attempt ends cancelled and the job is ready again. */
  release(jobId: string, attemptId: string, leaseToken: string): Promise<AttemptOutcome> {
    return this.db.transaction(async (trx) => {
      await this.locked(jobId, trx);
      const attempt = await this.fence(jobId, attemptId, leaseToken, trx);
      const ended = await this.attempts.end(attempt.id, { status: 'cancelled', error: 'released' }, trx);
      const ready = await this.jobs.update(jobId, { phase: 'ready', assignee: null }, trx);
      return { job: toJob(ready), attempt: toAttempt(ended) };
    });
  }

  /** Extends a live lease; a lost one (ended, other token, expired) is 409. */
  heartbeat(jobId: string, attemptId: string, leaseToken: string, leaseSeconds = DEFAULT_LEASE_SECONDS): Promise<Attempt> {
    return this.db.transaction(async (trx) => {
      const attempt = await this.fence(jobId, attemptId, leaseToken, trx);
      return toAttempt(await this.attempts.renew(attempt.id, leaseSeconds, trx));
    });
  }

  /** Ends a running attempt as failed for a reason the platform found (a budget exceeded), under its live lease. */
  terminate(jobId: string, attemptId: string, leaseToken: string, error: string, code: Failure['error_code']): Promise<AttemptOutcome> {
    return this.db.transaction(async (trx) => {
      const job = await this.locked(jobId, trx);
      const attempt = await this.fence(jobId, attemptId, leaseToken, trx);
      const result_json = { svc: { status: 'failed', reason: error }, error_code: code };
      return this.fail(job, attempt, { result_status: 'failed', result_summary: null, result_json, error }, trx, code);
    });
  }

  /** The end of an attempt as its worker reports it, written only under the attempt's live lease. */
  complete(jobId: string, attemptId: string, completion: Completion): Promise<AttemptOutcome> {
    return this.db.transaction(async (trx) => {
      const job = await this.locked(jobId, trx);
      const attempt = await this.fence(jobId, attemptId, completion.lease_token, trx);
      const { status, summary, reason } = completion.result;
      const reported = { result_status: status, result_summary: summary ?? null, result_json: completion.result_json ?? { svc: completion.result } };
      if (status === 'failed') return this.fail(job, attempt, { ...reported, error: completion.error ?? reason ?? 'failed' }, trx, 'ATTEMPT_FAILED', completion.final);
      const ended = await this.attempts.end(attempt.id, { status: 'succeeded', ...reported, error: completion.error ?? null }, trx);
      const next = status === 'success' ? afterSuccess(job) : await this.afterWaiting(job, trx);
      return { job: toJob(await this.jobs.update(job.id, next, trx)), attempt: toAttempt(ended) };
    });
  }

  /** Running attempts whose lease expired fail with 'lease expired'; their jobs are retried or cancelled. */
  reapExpired(limit = 100): Promise<Reaped[]> {
    return this.db.transaction(async (trx) => {
      const reaped: Reaped[] = [];
      for (const attempt of await this.attempts.expired(limit, trx)) {
        const job = await this.locked(attempt.job_id, trx);
        const outcome = await this.fail(job, attempt, { error: 'lease expired' }, trx, 'LEASE_EXPIRED');
        reaped.push({ job_id: job.id, attempt_id: attempt.id, phase: outcome.job.phase });
      }
      return reaped;
    });
  }

  /** Cancelling an active or review job (the caller holds its row lock): the running attempt ends and frees its gates. */
  async cancelWork(job: JobRow, reason: string | undefined, trx: Db): Promise<Partial<JobRow>> {
    const running = await this.attempts.running(job.id, trx);
    if (running) await this.attempts.end(running.id, { status: 'cancelled', error: 'job cancelled' }, trx);
    return { phase: 'cancelled', closed_at: new Date(), close_reason: reason ?? 'cancelled' };
  }

  /** The job row, locked for the transaction; 404 when there is none. */
  async locked(jobId: string, trx: Db): Promise<JobRow> {
    const job = await this.jobs.lock(jobId, trx);
    if (!job) throw Boom.notFound(`job ${jobId} not found`);
    return job;
  }

  /** 409 naming every unfinished job that `job` waits for. */
  async requireUnblocked(job: JobRow, trx: Db): Promise<void> {
    const blockers = await unfinishedBlockers(trx, job.id);
    if (blockers.length) throw Boom.conflict(`job ${job.id} is blocked by ${blockers.map((b) => `${b.id} (${b.phase})`).join(', ')}`);
  }

  /** The attempt, row-locked, when `leaseToken` holds its live lease: fencing for every write of its runner (end, heartbeat, usage, phases). */
  async fence(jobId: string, attemptId: string, leaseToken: string, trx: Db): Promise<AttemptRow> {
    const found = await this.attempts.lock(jobId, attemptId, trx);
    if (!found) throw Boom.notFound(`attempt ${attemptId} of job ${jobId} not found`);
    const { lease_live: live, ...attempt } = found;
    if (attempt.status !== 'running') throw leaseLost(attempt, `the attempt is ${attempt.status}`);
    if (attempt.lease_token !== leaseToken) throw leaseLost(attempt, 'the lease token does not match');
    if (!live) throw leaseLost(attempt, `the lease expired at ${attempt.lease_expires_at!.toISOString()}`);
    return attempt;
  }

  /**
   * A failed attempt: the job is retried (ready for a new attempt) while `max_attempts` allows and
   * the failure is not `final`, else cancelled, which is the job failing for good: `system.job.failed`.
   */
  private async fail(job: JobRow, attempt: AttemptRow, ending: Omit<AttemptEnding, 'status'> & { error: string }, trx: Db, code: Failure['error_code'] = 'ATTEMPT_FAILED', final = false): Promise<AttemptOutcome> {
    const ended = await this.attempts.end(attempt.id, { status: 'failed', ...ending }, trx);
    const failures = await this.attempts.failures(job.id, trx);
    const allowed = typeof job.hints.max_attempts === 'number' ? job.hints.max_attempts : DEFAULT_MAX_ATTEMPTS;
    const retry = !final && failures < allowed;
    if (!retry) await emitJobFailed(trx, job, ended, { error_message: ending.error, error_code: code, failures, max_attempts: allowed });
    const why = final ? 'not retried' : `${failures} of ${allowed} allowed attempts failed`;
    const next: Partial<JobRow> = retry
      ? { phase: 'ready', assignee: null }
      : { phase: 'cancelled', closed_at: new Date(), close_reason: `attempt ${ended.attempt_number} failed (${why}): ${ending.error}` };
    return { job: toJob(await this.jobs.update(job.id, next, trx)), attempt: toAttempt(ended) };
  }

  /** Back to ready for a later attempt; a short pause unless unfinished blockers hold the job anyway. */
  private async afterWaiting(job: JobRow, trx: Db): Promise<Partial<JobRow>> {
    const blocked = (await unfinishedBlockers(trx, job.id)).length > 0;
    return { phase: 'ready', assignee: null, ...(blocked ? {} : { defer_until: new Date(Date.now() + WAITING_BACKOFF_SECONDS * 1000) }) };
  }
}

function afterSuccess(job: JobRow): Partial<JobRow> {
  return job.review_required === 'none' ? { phase: 'done', closed_at: new Date() } : { phase: 'review', review_status: 'pending' };
}
