import { inject, injectable } from '../../../core/di.ts';
import type { Db } from '../../../core/db/knex.ts';
import { Conflict } from '../../../core/errors.ts';
import { AuthCache } from '../../../core/auth/cache.ts';
import { JobPhaseListeners } from '../../../core/ports/jobs.ts';
import { AttemptCompletionListeners } from '../../../core/ports/attempts.ts';
import { JobRepository, toJob, type Job, type JobRow } from '../job/repository.ts';
import { AttemptRepository, WORKER_LOST, toAttempt, type Attempt, type AttemptEnding, type AttemptRow, type ClaimedAttempt } from '../attempts/attempts.ts';
import { ReceiptStore } from '../receipts/receipt-store.ts';
import { isFinished, unfinishedBlockers } from '../relations/blockers.ts';
import { rollUp } from '../workflows/rollup.ts';
import type { PhaseMover } from '../workflows/roots.ts';
import { JobWakeups, wakes } from './wakeups.ts';
import { emitAttemptCompleted, emitJobFailed, type Failure } from './system-events.ts';
import { RaceLaneRepository } from '../races/race-lanes.ts';

/** A `waiting` result returns the job to ready with this pause, unless unfinished blockers hold it back anyway. */
export const WAITING_BACKOFF_SECONDS = 30;
/** Without `hints.max_attempts` a job gets one attempt: the first failure cancels it. */
export const DEFAULT_MAX_ATTEMPTS = 1;
/** How many times a job's attempt may be lost with its worker and retried without spending `max_attempts`. */
export const WORKER_LOSS_RETRIES = 3;

export interface Claimed {
  job: Job;
  attempt: ClaimedAttempt;
}
export interface AttemptOutcome {
  job: Job;
  attempt: Attempt;
}
/** One job of a claim batch that fits its org's quota: claimed (with its attempt), or gated and left to the per-job path (no attempt). */
export interface ClaimPick {
  job: JobRow;
  attempt: ClaimedAttempt | null;
}

/** A gate of the job is held by another job: 409 whose body names the keys and the job that wanted them. */
export class GatesHeld extends Conflict {
  constructor(
    readonly jobId: string,
    readonly heldKeys: string[],
  ) {
    super(`job ${jobId} waits for gates held by other jobs: ${heldKeys.join(', ')}`, { blocked_on_gates: heldKeys, jobId });
  }
}

/**
 * The one owner of a job's life: every phase change and every attempt ending goes through here, and
 * everything that follows from it happens in the caller's transaction: claimers woken (after commit),
 * the workflow root rolled up, the phase listeners of other domains called, the attempt's receipt
 * written, its completion listeners called and the system events emitted. Callers hold the job's row
 * lock (`lock`) and have checked the rules of the move they ask for; the repositories below only
 * hold SQL.
 */
@injectable()
export class JobLifecycle implements PhaseMover {
  constructor(
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(AttemptRepository) private readonly attempts: AttemptRepository,
    @inject(ReceiptStore) private readonly receipts: ReceiptStore,
    @inject(JobWakeups) private readonly wakeups: JobWakeups,
    @inject(JobPhaseListeners) private readonly listeners: JobPhaseListeners,
    @inject(AttemptCompletionListeners) private readonly completions: AttemptCompletionListeners,
    @inject(AuthCache) private readonly authCache: AuthCache,
    @inject(RaceLaneRepository) private readonly lanes: RaceLaneRepository,
  ) {}

  lock(id: string, trx: Db): Promise<JobRow | undefined> {
    return this.jobs.lock(id, trx);
  }

  /**
   * Root jobs in one autocommit INSERT (see JobRepository.insertRoots): when one of them is ready,
   * the same statement wakes the claimers, so the notice goes out with its commit and costs no
   * round trip of its own (the statement commits alone, so it holds the notify lock only as long as
   * its commit).
   */
  async insertRoots(rows: Parameters<JobRepository['insertRoots']>[0]): Promise<(JobRow | null)[]> {
    const wake = rows.some((r) => wakes(r.phase));
    const inserted = await this.jobs.insertRoots(rows, wake ? this.wakeups.channel : null);
    if (wake && inserted.some((r) => r !== null)) this.wakeups.heardHere();
    return inserted;
  }

  /** Jobs just written: claimers hear of the ready ones once `trx` commits, or at once for rows written without one. */
  created(rows: Pick<JobRow, 'phase'>[], trx?: Db): void {
    if (!rows.some((r) => wakes(r.phase))) return;
    if (trx) this.wakeups.afterCommit(trx);
    else this.wakeups.notify();
  }

  /** Field and phase changes of one job, with what follows a phase change (or a new deferral). */
  async change(id: string, changes: Partial<JobRow>, trx: Db): Promise<JobRow> {
    const row = await this.jobs.update(id, changes, trx);
    if ((changes.phase !== undefined || changes.defer_until !== undefined) && wakes(row.phase)) this.wakeups.afterCommit(trx);
    if (changes.phase !== undefined) {
      if (row.parent_id && isFinished(changes.phase)) await rollUp(this, row, trx);
      await this.listeners.changed([row], trx);
    }
    return row;
  }

  /**
   * Opens a running attempt with a lease for `owner` (counted against `orgId`, the org of the job's
   * project), takes the job's gates and makes the job active (plus `changes`). The caller holds the
   * job's row lock and has checked phase, blockers and the org's running-attempt quota (RunningQuota).
   */
  async start(job: JobRow, orgId: string, owner: string, leaseSeconds: number, trx: Db, changes: Partial<JobRow> = {}): Promise<Claimed> {
    const attempt = await this.attempts.open(job.id, orgId, owner, leaseSeconds, trx);
    const held = await this.attempts.acquireGates(job, attempt.id, trx);
    if (held.length) throw new GatesHeld(job.id, held);
    const active = await this.change(job.id, { phase: 'active', assignee: owner, ...changes }, trx);
    return { job: toJob(active), attempt };
  }

  /**
   * One round of a batch claim (AttemptRepository.openPicked): the gate-less picks that fit their
   * orgs' quotas become active in that one statement, and the phase listeners hear of them together here.
   */
  async claimPicked(picks: { job: JobRow; orgId: string }[], owner: string, leaseSeconds: number, quota: number, trx: Db): Promise<ClaimPick[]> {
    if (!picks.length) return [];
    const placed = await this.attempts.openPicked(picks, owner, leaseSeconds, quota, trx);
    await this.listeners.changed(
      placed.filter((p) => p.attempt).map((p) => p.job),
      trx,
    );
    return placed;
  }

  /**
   * Ends an attempt however it ends (complete, release, submit, reaping, cancel): its gates are
   * freed, its immutable receipt written, the completion listeners called (a status post to the
   * job's coordination thread) and then `system.job.attempt.completed` emitted, naming their thread.
   */
  async endAttempt(attemptId: string, ending: AttemptEnding, trx: Db): Promise<AttemptRow> {
    const row = await this.attempts.end(attemptId, ending, trx);
    this.authCache.attemptEnded(trx, attemptId); // its job token stops once this commits
    const { cost } = await this.receipts.write(row, trx);
    const job = await this.jobs.endingFacts(row.job_id, trx);
    const note = await this.completions.completed({ job, attempt: row, cost }, trx);
    await emitAttemptCompleted(trx, job, row, note.thread_id);
    return row;
  }

  /** The claimer gives the job back: its attempt ends cancelled and the job is ready again. */
  async release(job: JobRow, attempt: AttemptRow, trx: Db): Promise<AttemptOutcome> {
    const ended = await this.endAttempt(attempt.id, { status: 'cancelled', error: 'released' }, trx);
    if (ended.race_lane !== null) return this.laneAgain(job, ended, trx);
    const ready = await this.change(job.id, { phase: 'ready', assignee: null }, trx);
    return { job: toJob(ready), attempt: toAttempt(ended) };
  }

  /** A `success` or `waiting` result: done or review after success; ready again, a little later, after waiting. */
  async succeed(job: JobRow, attempt: AttemptRow, reported: Omit<AttemptEnding, 'status'>, trx: Db): Promise<AttemptOutcome> {
    const ended = await this.endAttempt(attempt.id, { status: 'succeeded', ...reported }, trx);
    if (ended.race_lane !== null) return this.laneEnded(job, ended, trx);
    const next = reported.result_status === 'success' ? afterSuccess(job) : await this.afterWaiting(job, trx);
    return { job: toJob(await this.change(job.id, next, trx)), attempt: toAttempt(ended) };
  }

  /**
   * A failed attempt: the job is retried (ready for a new attempt) while `max_attempts` allows and
   * the failure is not `final`, else cancelled, which is the job failing for good: `system.job.failed`.
   */
  async fail(
    job: JobRow,
    attempt: AttemptRow,
    ending: Omit<AttemptEnding, 'status'> & { error: string },
    trx: Db,
    code: Failure['error_code'] = 'ATTEMPT_FAILED',
    final = false,
  ): Promise<AttemptOutcome> {
    const ended = await this.endAttempt(attempt.id, { status: 'failed', ...ending }, trx);
    if (ended.race_lane !== null) return this.laneEnded(job, ended, trx);
    const failures = await this.attempts.failures(job.id, trx);
    const allowed = typeof job.hints.max_attempts === 'number' ? job.hints.max_attempts : DEFAULT_MAX_ATTEMPTS;
    const retry = !final && failures < allowed;
    if (!retry) await emitJobFailed(trx, job, ended, { error_message: ending.error, error_code: code, failures, max_attempts: allowed });
    const why = final ? 'not retried' : `${failures} of ${allowed} allowed attempts failed`;
    const next: Partial<JobRow> = retry
      ? { phase: 'ready', assignee: null }
      : { phase: 'cancelled', closed_at: new Date(), close_reason: `attempt ${ended.attempt_number} failed (${why}): ${ending.error}` };
    return { job: toJob(await this.change(job.id, next, trx)), attempt: toAttempt(ended) };
  }

  /**
   * An attempt whose lease ran out: the svc process running it died or stalled, which is not the
   * job's failure (the work may even have finished unrecorded). The attempt ends cancelled, saying
   * so, and the job is ready again without spending `max_attempts`, up to WORKER_LOSS_RETRIES times
   * per job (as Kubernetes' pod failure policy ignores disruptions); a job that keeps losing its
   * worker then fails as any attempt does (LEASE_EXPIRED).
   */
  async workerLost(job: JobRow, attempt: AttemptRow, trx: Db): Promise<AttemptOutcome> {
    if (attempt.race_lane !== null) return this.laneLost(job, attempt, trx);
    const lost = await this.attempts.lostWithWorkers(job.id, trx);
    if (lost >= WORKER_LOSS_RETRIES) {
      return this.fail(job, attempt, { error: `lease expired (its worker was lost ${lost + 1} times)` }, trx, 'LEASE_EXPIRED');
    }
    const error = `${WORKER_LOST}: the lease expired; retried without counting against max_attempts (${lost + 1} of ${WORKER_LOSS_RETRIES} such retries)`;
    const ended = await this.endAttempt(attempt.id, { status: 'cancelled', error }, trx);
    return { job: toJob(await this.change(job.id, { phase: 'ready', assignee: null }, trx)), attempt: toAttempt(ended) };
  }

  /** Cancelling an active or review job (the caller holds its row lock): the running attempt ends and frees its gates; returns the cancelling change. */
  async cancelWork(job: JobRow, reason: string | undefined, trx: Db): Promise<Partial<JobRow>> {
    for (const running of await this.attempts.allRunning(job.id, trx)) await this.endAttempt(running.id, { status: 'cancelled', error: 'job cancelled' }, trx);
    await this.lanes.endAll(job.id, trx);
    return { phase: 'cancelled', closed_at: new Date(), close_reason: reason ?? 'cancelled' };
  }

  /**
   * A race lane's attempt ended with a result (docs/worker.md, "Rival attempts"): the lane is over and the job stays
   * active, waiting for the choice among its rivals; nothing is retried and the job does not fail.
   */
  private async laneEnded(job: JobRow, ended: AttemptRow, trx: Db): Promise<AttemptOutcome> {
    await this.lanes.set(job.id, ended.race_lane!, 'ended', trx);
    return { job: toJob(job), attempt: toAttempt(ended) };
  }

  /** A race lane given back: ready for the next claimer, as a released job is. */
  private async laneAgain(job: JobRow, ended: AttemptRow, trx: Db): Promise<AttemptOutcome> {
    await this.lanes.set(job.id, ended.race_lane!, 'ready', trx);
    this.wakeups.afterCommit(trx);
    return { job: toJob(job), attempt: toAttempt(ended) };
  }

  /** A race lane's attempt lost with its worker: the lane runs again, up to WORKER_LOSS_RETRIES times, as a job would. */
  private async laneLost(job: JobRow, attempt: AttemptRow, trx: Db): Promise<AttemptOutcome> {
    const lane = await this.lanes.lane(job.id, attempt.race_lane!, trx);
    if ((lane?.worker_losses ?? 0) >= WORKER_LOSS_RETRIES) {
      const ended = await this.endAttempt(attempt.id, { status: 'failed', error: `lease expired (its worker was lost ${WORKER_LOSS_RETRIES + 1} times)` }, trx);
      return this.laneEnded(job, ended, trx);
    }
    const losses = await this.lanes.lost(job.id, attempt.race_lane!, trx);
    const error = `${WORKER_LOST}: the lease expired; race lane ${attempt.race_lane} runs again (${losses} of ${WORKER_LOSS_RETRIES} such retries)`;
    const ended = await this.endAttempt(attempt.id, { status: 'cancelled', error }, trx);
    this.wakeups.afterCommit(trx);
    return { job: toJob(job), attempt: toAttempt(ended) };
  }

  /** Back to ready for a later attempt; a short pause unless unfinished blockers hold the job anyway. */
  private async afterWaiting(job: JobRow, trx: Db): Promise<Partial<JobRow>> {
    const blocked = (await unfinishedBlockers(trx, job.id)).length > 0;
    return { phase: 'ready', assignee: null, ...(blocked ? {} : { defer_until: new Date(Date.now() + WAITING_BACKOFF_SECONDS * 1000) }) };
  }
}

/** Where a job goes after its attempt succeeded: done, or review when it asks for one. */
export function afterSuccess(job: JobRow): Partial<JobRow> {
  return job.review_required === 'none' ? { phase: 'done', closed_at: new Date() } : { phase: 'review', review_status: 'pending' };
}
