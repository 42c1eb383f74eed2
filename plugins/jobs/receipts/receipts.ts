import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { emitEvent } from '../../../core/events/emit.ts';
import { Claims } from '../claims/claims.ts';
import { ReceiptStore, type LlmCall, type PhaseTiming, type StoredReceipt } from './receipt-store.ts';
import { budgetExceeded } from './budget.ts';
import { ReceiptPricing } from './receipt-pricing.ts';
import { LeaseLost, NotFound } from '../../../core/errors.ts';
import { isObject } from '../../../core/is-object.ts';

export interface Recorded {
  recorded: number;
  /** Set when this usage took the attempt over the job's budget: the attempt has been ended as failed. */
  budget_exceeded?: string;
}

/**
 * What the runner of an attempt reports while it runs (usage of each `llm.call`, phase timings), fenced by
 * the lease token like heartbeat and complete; and the receipts written when attempts end.
 */
@injectable()
export class Receipts {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Claims) private readonly claims: Claims,
    @inject(ReceiptStore) private readonly store: ReceiptStore,
    @inject(ReceiptPricing) private readonly pricing: ReceiptPricing,
  ) {}

  /** Usage rows for a running attempt under its live lease; 409 `lease lost …` otherwise, nothing written. */
  async recordUsage(jobId: string, attemptId: string, leaseToken: string, calls: LlmCall[]): Promise<Recorded> {
    const recorded = await this.db.transaction(async (trx) => {
      const attempt = await this.claims.fence(jobId, attemptId, leaseToken, trx);
      const job = await trx('jobs').where({ id: jobId }).first('project_id');
      for (const call of calls) {
        // Usage only: the call's counts and timing, never prompt or response content (none is accepted).
        await emitEvent(trx, {
          project_id: job.project_id,
          type: 'llm.call',
          source: 'runner',
          actor_type: 'system',
          payload: { job_id: jobId, attempt_id: attemptId, ...call },
        });
      }
      return this.store.addUsage(attempt.id, calls, trx);
    });
    const over = await this.overBudget(jobId, attemptId);
    if (!over) return { recorded };
    // The platform ends the attempt itself, so a budget holds for external runners too; the lease token fences it.
    await this.claims.terminate(jobId, attemptId, leaseToken, over, 'BUDGET_EXCEEDED');
    return { recorded, budget_exceeded: over };
  }

  /**
   * Before a model call made for a running attempt: null when the call may go ahead. Else why not:
   * the attempt has ended (its error), or its usage so far has reached the job's budget, so any call
   * would take it over; then the attempt is ended now as failed (BUDGET_EXCEEDED), as recordUsage does.
   */
  async gateCall(jobId: string, attemptId: string): Promise<string | null> {
    const attempt = await this.db('job_attempts').where({ id: attemptId, job_id: jobId }).first('status', 'lease_token', 'error');
    if (!attempt) return 'the attempt of this job token does not exist';
    if (attempt.status !== 'running') return attempt.error ?? `the attempt has ended (${attempt.status})`;
    const over = await this.overBudget(jobId, attemptId, true);
    if (!over) return null;
    try {
      await this.claims.terminate(jobId, attemptId, attempt.lease_token, over, 'BUDGET_EXCEEDED');
    } catch (e) {
      if (!(e instanceof LeaseLost)) throw e; // ended meanwhile: the call is refused all the same
    }
    return over;
  }

  /** Why the attempt's usage so far is over the job's budget (or, `atLimit`, has reached it), or null (no budget set: not even read). */
  private async overBudget(jobId: string, attemptId: string, atLimit = false): Promise<string | null> {
    const job = await this.db('jobs').where({ id: jobId }).first('hints');
    if (!job || (job.hints.max_tokens === undefined && job.hints.max_cost === undefined)) return null;
    const { llm, cost } = await this.store.liveSections(attemptId);
    const currency = isObject(job.hints.max_cost) && typeof job.hints.max_cost.currency === 'string' ? job.hints.max_cost.currency : null;
    return budgetExceeded(job.hints, llm, cost, currency ? await this.pricing.rate(currency, new Date()) : null, atLimit);
  }

  /** Phase timings for a running attempt under its live lease (a name reported again replaces the earlier times). */
  recordPhases(jobId: string, attemptId: string, leaseToken: string, phases: PhaseTiming[]): Promise<Recorded> {
    return this.db.transaction(async (trx) => {
      const attempt = await this.claims.fence(jobId, attemptId, leaseToken, trx);
      return { recorded: await this.store.putPhases(attempt.id, phases, trx) };
    });
  }

  /** The receipt of the job's latest attempt that has one. */
  async ofJob(jobId: string): Promise<StoredReceipt> {
    const receipt = await this.store.latestOfJob(jobId);
    if (!receipt) throw new NotFound(`job ${jobId} has no receipt yet`);
    return receipt;
  }

  /** The receipt of one attempt of the job; 404 when the attempt is not the job's, or has none (it is still running). */
  async ofAttempt(jobId: string, attemptId: string): Promise<StoredReceipt> {
    const attempt = await this.db('job_attempts').where({ id: attemptId, job_id: jobId }).first('attempt_number', 'status');
    if (!attempt) throw new NotFound(`attempt ${attemptId} of job ${jobId} not found`);
    const receipt = await this.store.ofAttempt(attemptId);
    if (!receipt) {
      const why = attempt.status === 'running' ? ': it is still running' : '';
      throw new NotFound(`attempt ${attempt.attempt_number} (${attemptId}) of job ${jobId} has no receipt yet${why}`);
    }
    return receipt;
  }
}
