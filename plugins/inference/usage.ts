import type { DependencyContainer } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import { MachineTokens } from '../../core/auth/machine-tokens.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { AttemptControlToken, LeaseLost } from '../../core/ports/attempts.ts';
import { InferenceRepository } from './repository.ts';
import type { ResolvedModel } from './resolution.ts';
import type { CallerScope } from './scopes.ts';
import type { TokenUsage } from './providers/types.ts';

export interface CallOutcome {
  stream: boolean;
  status: number;
  error: string | null;
  usage: TokenUsage;
  latencyMs: number;
  firstByteMs: number | null;
}

/**
 * Records every proxied call (an `inference_usage` row: tokens, cache, model, latency; never prompt
 * or answer text). A call made with a job token also goes on its attempt through the jobs domain's
 * AttemptControl, under the attempt's live lease, so it counts toward the receipt and the budget
 * (which may end the attempt). An attempt that has ended by then keeps only the usage row.
 */
export class UsageRecorder {
  constructor(private readonly container: DependencyContainer) {}

  async record(principal: Principal, scope: CallerScope, resolved: ResolvedModel, outcome: CallOutcome): Promise<{ budgetExceeded: string | null }> {
    const { usage } = outcome;
    const job = principal.job ?? null;
    await this.container.resolve(InferenceRepository).recordUsage({
      org_id: scope.orgId,
      project_id: scope.projectId,
      job_id: job?.id ?? null,
      attempt_id: job?.attemptId ?? null,
      principal_kind: principal.kind,
      principal_id: principal.id,
      target_id: resolved.target.id,
      provider_kind: resolved.target.kind,
      model: resolved.requested,
      upstream_model: resolved.upstreamModel,
      stream: outcome.stream,
      status: outcome.status,
      error: outcome.error,
      ...usage,
      latency_ms: outcome.latencyMs,
      first_byte_ms: outcome.firstByteMs,
    });
    const counted = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
    if (!job || counted === 0 || !this.container.isRegistered(AttemptControlToken)) return { budgetExceeded: null };
    const lease = await this.container.resolve(MachineTokens).liveLease(job);
    if (!lease) return { budgetExceeded: null };
    try {
      return await this.container.resolve(AttemptControlToken).recordUsage(lease, [
        {
          model: resolved.upstreamModel,
          provider: resolved.target.kind,
          ...usage,
          duration_ms: outcome.latencyMs,
        },
      ]);
    } catch (e) {
      if (e instanceof LeaseLost) return { budgetExceeded: null };
      throw e;
    }
  }

  /** For streams, whose usage is known only after the answer has gone: a failure is logged, never thrown at nobody. */
  recordLater(principal: Principal, scope: CallerScope, resolved: ResolvedModel, outcome: CallOutcome): void {
    this.record(principal, scope, resolved, outcome).catch((err) =>
      this.container.resolve(Tokens.Logger).warn({ err, model: resolved.requested }, 'inference usage not recorded'),
    );
  }
}
