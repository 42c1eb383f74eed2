/** How long a failed item waits before its next attempt: exponential from `initialMs` by `factor`, at most `maxMs`. */
export interface RetryPolicy {
  initialMs: number;
  factor: number;
  maxMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { initialMs: 1_000, factor: 2, maxMs: 5 * 60_000 };

/**
 * The delay before attempt `attempt + 1` after attempt `attempt` (1-based) failed: the exponential
 * step with "equal jitter" (between half of it and all of it), so items that failed together (a
 * database restart) do not come back together, and with `factor` ≥ 2 each delay is at least the last.
 */
export function retryDelayMs(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const step = Math.min(policy.maxMs, policy.initialMs * policy.factor ** Math.max(0, Math.min(attempt - 1, 60)));
  return Math.round(step / 2 + (random() * step) / 2);
}
