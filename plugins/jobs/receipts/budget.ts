import { isObject } from '../../../core/is-object.ts';
import type { CostSection, LlmSection } from './receipt-assembly.ts';

export const BUDGET_EXCEEDED = 'BUDGET_EXCEEDED';

/** Tokens a budget counts: everything the model read or wrote (reasoning is part of output where providers bill it so). */
export const budgetTokens = (llm: LlmSection): number => llm.input_tokens + llm.output_tokens + llm.cache_read_tokens + llm.cache_write_tokens;

/**
 * Why the attempt's usage so far exceeds the job's `hints.max_tokens` or `hints.max_cost`, or null.
 * Fail-open: models without a price count nothing towards `max_cost` (the receipt names them), and
 * a `max_cost` in a currency other than the billing currency (USD) is not enforced.
 */
export function budgetExceeded(hints: Record<string, unknown>, llm: LlmSection, cost: CostSection): string | null {
  const tokens = budgetTokens(llm);
  if (typeof hints.max_tokens === 'number' && tokens > hints.max_tokens) {
    return `${BUDGET_EXCEEDED}: ${tokens} tokens used, over hints.max_tokens ${hints.max_tokens}`;
  }
  const max = isObject(hints.max_cost) ? hints.max_cost : null;
  if (max && max.currency === cost.billed_cost.currency && typeof max.amount === 'number' && cost.billed_cost.amount > max.amount) {
    return `${BUDGET_EXCEEDED}: cost ${cost.billed_cost.amount} ${cost.billed_cost.currency}, over hints.max_cost ${max.amount} ${max.currency}`;
  }
  return null;
}
