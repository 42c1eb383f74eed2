import type { Principal } from '../../core/auth/principal.ts';
import { Forbidden } from '../../core/errors.ts';
import type { AttemptControl } from '../../core/ports/attempts.ts';

/** A job's model call refused before it went upstream: its attempt has ended, or its budget leaves no room (403, in the caller's protocol). */
export class CallRefused extends Forbidden {
  constructor(readonly reason: string) {
    super(`model call refused: ${reason}`);
  }
}

/**
 * The budget check before each call made with a job token: the jobs domain answers through
 * AttemptControl (ending the attempt BUDGET_EXCEEDED when its usage has reached the job's
 * hints.max_tokens or max_cost), and the gateway refuses the call. The call that takes usage over
 * the budget is recorded after it (UsageRecorder), which ends the attempt the same way; so an
 * attempt never gets more than one call past its budget.
 */
export class BudgetGate {
  constructor(private readonly attempts: () => AttemptControl | null) {}

  async check(principal: Principal): Promise<void> {
    const job = principal.job;
    const control = this.attempts();
    if (!job || !control?.gateModelCall) return;
    const reason = await control.gateModelCall({ jobId: job.id, attemptId: job.attemptId });
    if (reason) throw new CallRefused(reason);
  }
}
