/**
 * A receipt from an ended attempt, its recorded phases and its `llm.call` usage: pure functions, so the
 * same arithmetic serves the receipt written when an attempt ends and the live figures of a running
 * attempt (compare).
 */
import type { AttemptRow } from '../attempts/attempts.ts';
import type { WorkspaceReport } from '../../../core/ports/attempts.ts';
import { PRICES, PRICE_TABLE_ID, costMicroUsd, microToUsd, priceOf, roundToMicro } from '../../../domain/pricing/prices.ts';
import type { PricingContext } from '../../../core/ports/billing.ts';

/** Without a billing domain: the built-in table, billed in USD. */
export const BUILTIN_PRICING: PricingContext = { card: { id: PRICE_TABLE_ID, models: PRICES, compute: {} }, currency: 'USD', rate_to_usd: 1 };

/** Bumped when the shape changes; receipts are never rewritten, so readers branch on it. */
export const RECEIPT_VERSION = 1;

/**
 * `priced_as` of a model the rate card has no price for when the CLI reported what its calls cost:
 * the figure shown for it is the CLI's own (`reported_cost_usd`). Card entries never contain spaces,
 * so it cannot be mistaken for one.
 */
export const REPORTED_BY_CLI = 'reported by the CLI';

export const TOKEN_FIELDS = ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'reasoning_tokens'] as const;
export type TokenCounts = Record<(typeof TOKEN_FIELDS)[number], number>;

/** The usage of one model within an attempt (a GROUP BY model over attempt_usage). */
export interface ModelUsageRow extends TokenCounts {
  model: string;
  calls: number;
  duration_ms: number;
  providers: string[];
  /** The sum of the costs the CLI reported for the model's calls; null or absent when it reported none. */
  reported_cost_usd?: number | null;
}
export interface PhaseRow {
  name: string;
  started_at: Date;
  ended_at: Date;
}

export interface ModelUsage extends TokenCounts {
  calls: number;
  duration_ms: number;
  providers: string[];
  /** Null when the model has no price (fail-open: it counts 0). */
  cost_usd: number | null;
  /** What the coding CLI said the model's calls cost, summed; null when it said nothing. Shown, never billed. */
  reported_cost_usd: number | null;
  /** The price-table entry that matched; REPORTED_BY_CLI when none did but the CLI reported a cost; else null. */
  priced_as: string | null;
}
export interface LlmSection extends TokenCounts {
  calls: number;
  duration_ms: number;
  models: Record<string, ModelUsage>;
}
/** priced: every model used has a price (also when none was used); partial: some do; unpriced: none does. */
export type Pricing = 'priced' | 'partial' | 'unpriced';
export interface CostSection {
  base_cost_usd: number;
  billed_cost: { currency: string; amount: number };
  pricing: Pricing;
  unpriced_models: string[];
  /** What the coding CLIs said the calls cost, all models; null when none said. Not part of base_cost_usd or billed_cost. */
  reported_cost_usd: number | null;
  /** The rate card used; null when none was in force (everything unpriced). */
  price_table: string | null;
  /** USD per unit of the billed currency used to convert; null when none was in force (billed in USD). */
  exchange_rate: number | null;
}
export interface Receipt {
  receipt_version: number;
  attempt_id: string;
  attempt_number: number;
  job_id: string;
  status: AttemptRow['status'];
  result_status: AttemptRow['result_status'];
  timing: { started_at: string; ended_at: string; billable_ms: number; phases: Record<string, number> };
  llm: LlmSection;
  cost: CostSection;
  compute: { resource_class: string; billable_ms: number; cost_usd: number | null };
  /** What the attempt's workspace reused and handed on (docs/workspaces.md); null for a fresh isolated one. Absent before workspaces were recorded. */
  workspace?: WorkspaceReport | null;
}

const zeroTokens = (): TokenCounts => ({ input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0 });

/** A figure the CLI reported, in micro-USD; null when it reported none. */
const reportedMicro = ({ reported_cost_usd: usd = null }: ModelUsageRow): number | null => (usd === null ? null : Number(usd) * 1e6);

/**
 * Token totals, calls and the per-model breakdown, with each model's cost; plus the cost section
 * (`computeMicro`: the compute cost already priced, in micro-USD). Fail-open: a model without a
 * price counts 0; without a rate the bill stays in USD. What a CLI reported a call cost is shown
 * beside (per model and in total) and never enters the base cost: billing does not trust it.
 */
export function usageSections(rows: ModelUsageRow[], pricing: PricingContext = BUILTIN_PRICING, computeMicro = 0): { llm: LlmSection; cost: CostSection } {
  const llm: LlmSection = { ...zeroTokens(), calls: 0, duration_ms: 0, models: {} };
  const unpriced: string[] = [];
  let micro = 0;
  let reportedTotal: number | null = null;
  for (const row of rows) {
    const match = pricing.card ? priceOf(row.model, pricing.card.models) : null;
    const tokens = Object.fromEntries(TOKEN_FIELDS.map((f) => [f, Number(row[f])])) as TokenCounts;
    const modelMicro = match ? costMicroUsd(match.price, tokens) : null;
    if (modelMicro === null) unpriced.push(row.model);
    else micro += modelMicro;
    const reported = reportedMicro(row);
    if (reported !== null) reportedTotal = (reportedTotal ?? 0) + reported;
    for (const f of TOKEN_FIELDS) llm[f] += tokens[f];
    llm.calls += Number(row.calls);
    llm.duration_ms += Number(row.duration_ms);
    llm.models[row.model] = {
      calls: Number(row.calls),
      ...tokens,
      duration_ms: Number(row.duration_ms),
      providers: [...row.providers].sort(),
      cost_usd: modelMicro === null ? null : microToUsd(modelMicro),
      reported_cost_usd: reported === null ? null : microToUsd(reported),
      priced_as: match?.id ?? (reported === null ? null : REPORTED_BY_CLI),
    };
  }
  const status: Pricing = unpriced.length === 0 ? 'priced' : unpriced.length < rows.length ? 'partial' : 'unpriced';
  const base = microToUsd(micro + computeMicro);
  return {
    llm,
    cost: {
      base_cost_usd: base,
      billed_cost: billed(base, pricing),
      pricing: status,
      unpriced_models: unpriced.sort(),
      reported_cost_usd: reportedTotal === null ? null : microToUsd(reportedTotal),
      price_table: pricing.card?.id ?? null,
      exchange_rate: pricing.rate_to_usd,
    },
  };
}

/** USD in the org's currency at the rate in force, six decimals; without a rate, USD. */
function billed(usd: number, pricing: PricingContext): { currency: string; amount: number } {
  if (pricing.rate_to_usd === null) return { currency: 'USD', amount: usd };
  return { currency: pricing.currency, amount: roundToMicro(usd / pricing.rate_to_usd) };
}

/** Compute cost in micro-USD: billable minutes × the card's price for the resource class; null when it has none. */
export function computeMicroUsd(pricing: PricingContext, resourceClass: string, billableMs: number): number | null {
  const perMinute = pricing.card?.compute[resourceClass];
  return perMinute === undefined ? null : (billableMs / 60_000) * perMinute * 1e6;
}

const resourceClassOf = (hints: Record<string, unknown>): string => (typeof hints.resource_class === 'string' ? hints.resource_class : 'default');

const ms = (from: Date, to: Date) => Math.max(0, to.getTime() - from.getTime());

/** The receipt of an ended attempt. `hints` are the job's (for `resource_class`); `pricing` what was in force when it started. */
export function assembleReceipt(
  attempt: AttemptRow,
  hints: Record<string, unknown>,
  phases: PhaseRow[],
  usage: ModelUsageRow[],
  pricing: PricingContext = BUILTIN_PRICING,
): Receipt {
  if (!attempt.ended_at) throw new Error(`attempt ${attempt.id} has not ended: no receipt yet`);
  const billable = ms(attempt.started_at, attempt.ended_at);
  const resourceClass = resourceClassOf(hints);
  const compute = computeMicroUsd(pricing, resourceClass, billable);
  const { llm, cost } = usageSections(usage, pricing, compute ?? 0);
  return {
    receipt_version: RECEIPT_VERSION,
    attempt_id: attempt.id,
    attempt_number: attempt.attempt_number,
    job_id: attempt.job_id,
    status: attempt.status,
    result_status: attempt.result_status,
    timing: {
      started_at: attempt.started_at.toISOString(),
      ended_at: attempt.ended_at.toISOString(),
      billable_ms: billable,
      phases: Object.fromEntries(phases.map((p) => [p.name, ms(p.started_at, p.ended_at)])),
    },
    llm,
    cost,
    compute: { resource_class: resourceClass, billable_ms: billable, cost_usd: compute === null ? null : microToUsd(compute) },
    workspace: (attempt.git?.workspace as WorkspaceReport | undefined) ?? null,
  };
}

/** input + output + cache reads + cache writes (reasoning is part of output). */
export const totalTokens = (t: TokenCounts): number => t.input_tokens + t.output_tokens + t.cache_read_tokens + t.cache_write_tokens;

/** The lifecycle order of the usual phases; others follow by name. */
export const PHASE_ORDER = ['provision', 'workspace', 'clone', 'hydrate', 'execute', 'commit', 'push', 'diff'];
const phaseRank = (name: string) => (PHASE_ORDER.includes(name) ? PHASE_ORDER.indexOf(name) : PHASE_ORDER.length);

type Obj = Record<string, unknown>;
/** `keys` first, in that order, then any other keys as they come (fields of later receipt versions). */
function ordered(obj: unknown, keys: string[], nested: Record<string, (v: unknown) => unknown> = {}): Obj {
  const o = (obj ?? {}) as Obj;
  const all = [...keys.filter((k) => k in o), ...Object.keys(o).filter((k) => !keys.includes(k))];
  return Object.fromEntries(all.map((k) => [k, nested[k] ? nested[k](o[k]) : o[k]]));
}
const byKey = (obj: unknown, compare: (a: string, b: string) => number, each: (v: unknown) => unknown = (v) => v): Obj =>
  Object.fromEntries(
    Object.entries((obj ?? {}) as Obj)
      .sort(([a], [b]) => compare(a, b))
      .map(([k, v]) => [k, each(v)]),
  );

const MODEL_KEYS = ['calls', ...TOKEN_FIELDS, 'duration_ms', 'providers', 'cost_usd', 'reported_cost_usd', 'priced_as'];

/**
 * A stored receipt in its documented key order (jsonb keeps keys in its own order): sections as
 * assembled, models by name, phases in lifecycle order. The content is untouched.
 */
export function inDisplayOrder<R extends Receipt>(receipt: R): R {
  return ordered(
    receipt,
    ['receipt_version', 'attempt_id', 'attempt_number', 'job_id', 'status', 'result_status', 'timing', 'llm', 'cost', 'compute', 'workspace'],
    {
      timing: (v) =>
        ordered(v, ['started_at', 'ended_at', 'billable_ms', 'phases'], {
          phases: (p) => byKey(p, (a, b) => phaseRank(a) - phaseRank(b) || a.localeCompare(b)),
        }),
      llm: (v) =>
        ordered(v, ['calls', ...TOKEN_FIELDS, 'duration_ms', 'models'], {
          models: (m) =>
            byKey(
              m,
              (a, b) => a.localeCompare(b),
              (u) => ordered(u, MODEL_KEYS),
            ),
        }),
      cost: (v) =>
        ordered(v, ['base_cost_usd', 'billed_cost', 'pricing', 'unpriced_models', 'reported_cost_usd', 'price_table', 'exchange_rate'], {
          billed_cost: (b) => ordered(b, ['currency', 'amount']),
        }),
      compute: (v) => ordered(v, ['resource_class', 'billable_ms', 'cost_usd']),
    },
  ) as R;
}
