import { isObject } from '../../../core/is-object.ts';
import type { CostSection, LlmSection } from './receipt-assembly.ts';
import { roundToMicro } from '../../../domain/pricing/prices.ts';

export const BUDGET_EXCEEDED = 'BUDGET_EXCEEDED';

/** Tokens a budget counts: everything the model read or wrote (reasoning is part of output where providers bill it so). */
export const budgetTokens = (llm: LlmSection): number => llm.input_tokens + llm.output_tokens + llm.cache_read_tokens + llm.cache_write_tokens;

/**
 * Why the attempt's usage so far exceeds the job's `hints.max_tokens` or `hints.max_cost`, or null.
 * With `atLimit`, usage that has reached a limit counts too: no further call can stay within it
 * (the inference gateway asks this before each call).
 * A `max_cost` in the billed currency compares with the billed amount; in any other currency with
 * the USD cost converted at `maxCostRate` (USD per unit of that currency). Fail-open: models without
 * a price count nothing (the receipt names them), and without a rate `max_cost` is not enforced.
 */
export function budgetExceeded(hints: Record<string, unknown>, llm: LlmSection, cost: CostSection, maxCostRate: number | null, atLimit = false): string | null {
  const past = (used: number, max: number) => used > max || (atLimit && used >= max);
  const word = (used: number, max: number) => (used > max ? 'over' : 'at');
  const tokens = budgetTokens(llm);
  if (typeof hints.max_tokens === 'number' && past(tokens, hints.max_tokens)) {
    return `${BUDGET_EXCEEDED}: ${tokens} tokens used, ${word(tokens, hints.max_tokens)} hints.max_tokens ${hints.max_tokens}`;
  }
  const max = isObject(hints.max_cost) ? hints.max_cost : null;
  if (!max || typeof max.amount !== 'number') return null;
  const spent = max.currency === cost.billed_cost.currency ? cost.billed_cost.amount : maxCostRate ? cost.base_cost_usd / maxCostRate : null;
  if (spent !== null && past(spent, max.amount)) {
    return `${BUDGET_EXCEEDED}: cost ${roundToMicro(spent)} ${max.currency}, ${word(spent, max.amount)} hints.max_cost ${max.amount} ${max.currency}`;
  }
  return null;
}
