import type { Logger } from 'pino';
import type { MachineTokens } from '../../core/auth/machine-tokens.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { LeaseLost, type AttemptControl } from '../../core/ports/attempts.ts';
import type { InferenceRepository } from './repository.ts';
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
  constructor(
    private readonly repository: InferenceRepository,
    private readonly tokens: MachineTokens,
    /** The jobs domain's attempt control, when the jobs plugin is loaded. */
    private readonly attempts: () => AttemptControl | null,
    private readonly logger: Logger,
  ) {}

  async record(principal: Principal, scope: CallerScope, resolved: ResolvedModel, outcome: CallOutcome): Promise<{ budgetExceeded: string | null }> {
    const { usage } = outcome;
    const job = principal.job ?? null;
    await this.repository.recordUsage({
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
    if (!job || counted === 0 || !this.attempts()) return { budgetExceeded: null };
    const lease = await this.tokens.liveLease(job);
    if (!lease) return { budgetExceeded: null };
    try {
      return await this.attempts()!.recordUsage(lease, [
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
    this.record(principal, scope, resolved, outcome).catch((err) => this.logger.warn({ err, model: resolved.requested }, 'inference usage not recorded'));
  }
}
