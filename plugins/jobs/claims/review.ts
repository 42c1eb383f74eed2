import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { toJob, type Job, type JobRow } from '../job/repository.ts';
import { AttemptRepository } from '../attempts/attempts.ts';
import { Claims, DEFAULT_LEASE_SECONDS } from './claims.ts';
import { RunningQuota } from './running-quota.ts';
import { JobLifecycle, type Claimed } from '../lifecycle/lifecycle.ts';
import type { Phase } from '../job/schemas.ts';
import { Conflict } from '../../../core/errors.ts';
import { RaceLaneRepository } from '../races/race-lanes.ts';

export const REVIEW_ACTIONS = ['submit', 'approve', 'reject'] as const;
export type ReviewAction = (typeof REVIEW_ACTIONS)[number];

/** The job_reviews log: one row per submit, approve and reject, with its summary, comment or reason. */
@injectable()
export class ReviewLog {
  async add(jobId: string, action: ReviewAction, text: string | null, actorId: string, trx: Db): Promise<void> {
    await trx('job_reviews').insert({ job_id: jobId, action, text, actor_id: actorId });
  }
}

/** The review rows of the phase table: active → review (submit), review → done (approve), review → active (reject). */
@injectable()
export class Review {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(AttemptRepository) private readonly attempts: AttemptRepository,
    @inject(Claims) private readonly claims: Claims,
    @inject(JobLifecycle) private readonly lifecycle: JobLifecycle,
    @inject(ReviewLog) private readonly log: ReviewLog,
    @inject(RunningQuota) private readonly quota: RunningQuota,
    @inject(RaceLaneRepository) private readonly lanes: RaceLaneRepository,
  ) {}

  /** The work is handed in: its running attempt ends as succeeded with the summary, and the job awaits review. */
  submit(jobId: string, actorId: string, summary: string): Promise<Job> {
    return this.db.transaction(async (trx) => {
      const job = await this.lockedIn(jobId, 'active', 'submit', trx);
      if (await this.lanes.undecided(job.id, trx))
        throw new Conflict(`job ${jobId} is raced: each of its attempts ends with its own result, and one is chosen (POST /jobs/${jobId}/attempts/{n}/choose)`);
      const running = await this.attempts.running(job.id, trx);
      if (running) await this.lifecycle.endAttempt(running.id, { status: 'succeeded', result_status: 'success', result_summary: summary }, trx);
      await this.log.add(job.id, 'submit', summary, actorId, trx);
      return toJob(await this.lifecycle.change(job.id, { phase: 'review', review_status: 'pending' }, trx));
    });
  }

  approve(jobId: string, actorId: string, comment: string | undefined): Promise<Job> {
    return this.db.transaction(async (trx) => {
      const job = await this.lockedIn(jobId, 'review', 'approve', trx);
      await this.log.add(job.id, 'approve', comment ?? null, actorId, trx);
      return toJob(await this.lifecycle.change(job.id, { phase: 'done', review_status: 'approved', closed_at: new Date() }, trx));
    });
  }

  /** Back to work: a new attempt, claimed for the rejecting caller (who gets its lease token), under the same blocker, gate and quota rules as a claim. */
  reject(jobId: string, actorId: string, reason: string): Promise<Claimed> {
    return this.db.transaction(async (trx) => {
      const orgId = await this.quota.lockOrgOf(jobId, trx);
      const job = await this.lockedIn(jobId, 'review', 'reject', trx);
      await this.claims.requireUnblocked(job, trx);
      await this.quota.requirePlace(orgId, trx);
      await this.log.add(job.id, 'reject', reason, actorId, trx);
      return this.lifecycle.start(job, orgId, actorId, DEFAULT_LEASE_SECONDS, trx, { review_status: 'rejected' });
    });
  }

  /**
   * Back to the queue, for work a worker runs (a code host's review asked for changes): the rejection
   * is logged with its reason, which the next attempt reads in its context, and the job is ready
   * again for whichever worker claims it, instead of leased to the rejecting party.
   */
  sendBack(jobId: string, actorId: string, reason: string): Promise<Job> {
    return this.db.transaction(async (trx) => {
      const job = await this.lockedIn(jobId, 'review', 'reject', trx);
      await this.log.add(job.id, 'reject', reason, actorId, trx);
      return toJob(await this.lifecycle.change(job.id, { phase: 'ready', review_status: 'rejected', assignee: null }, trx));
    });
  }

  /** The job, row-locked, when it is in `phase`; otherwise 409 naming the phase it is in. */
  private async lockedIn(jobId: string, phase: Phase, action: ReviewAction, trx: Db): Promise<JobRow> {
    const job = await this.claims.locked(jobId, trx);
    if (job.phase !== phase) throw new Conflict(`job ${jobId} is ${job.phase}: ${action} needs a job in ${phase}`);
    return job;
  }
}
