import { isDeepStrictEqual } from 'node:util';
import { inject, injectable } from '../../../core/di.ts';
import { AttemptRepository, type AttemptRow } from '../attempts/attempts.ts';
import { ReceiptStore, type StoredReceipt } from './receipt-store.ts';
import { TOKEN_FIELDS, totalTokens, type Pricing, type TokenCounts } from './receipt-assembly.ts';
import { NotFound } from '../../../core/errors.ts';
import { roundToMicro } from '../../../domain/pricing/prices.ts';

export type TokenTotals = TokenCounts & { total_tokens: number; calls: number };
export interface Difference<T> {
  a: T;
  b: T;
  changed: boolean;
}
/** Numbers also carry `delta` = b − a (null when either side is null). */
export type NumericDifference = Difference<number | null> & { delta: number | null };

export interface AttemptSummary {
  id: string;
  attempt_number: number;
  status: AttemptRow['status'];
  result_status: AttemptRow['result_status'];
  error: string | null;
  started_at: Date;
  ended_at: Date | null;
  pricing: Pricing;
  receipt?: StoredReceipt | null;
}
export interface Comparison {
  job_id: string;
  a: AttemptSummary;
  b: AttemptSummary;
  differences: {
    status: Difference<string>;
    result_status: Difference<string | null>;
    result_summary: Difference<string | null>;
    result_json: Difference<Record<string, unknown> | null>;
    git: Difference<Record<string, unknown> | null>;
    duration_ms: NumericDifference;
    tokens: Difference<TokenTotals> & { delta: TokenTotals };
    cost_usd: NumericDifference;
  };
}

export interface Side {
  row: AttemptRow;
  receipt: StoredReceipt | null;
  tokens: TokenTotals;
  cost_usd: number;
  pricing: Pricing;
  duration_ms: number | null;
}

const TOTAL_KEYS = [...TOKEN_FIELDS, 'total_tokens', 'calls'] as const;
const diff = <T>(a: T, b: T): Difference<T> => ({ a, b, changed: !isDeepStrictEqual(a, b) });
const numeric = (a: number | null, b: number | null, round = (x: number) => x): NumericDifference => ({
  ...diff(a, b),
  delta: a === null || b === null ? null : round(b - a),
});

/**
 * Two attempts of a job side by side. Tokens, cost and duration come from the receipt; an attempt
 * without one (still running) shows the usage recorded so far, costed the same way, and no duration.
 */
@injectable()
export class AttemptComparison {
  constructor(
    @inject(AttemptRepository) private readonly attempts: AttemptRepository,
    @inject(ReceiptStore) private readonly store: ReceiptStore,
  ) {}

  async compare(jobId: string, a: number, b: number, includeReceipt: boolean): Promise<Comparison> {
    const [sa, sb] = [await this.side(jobId, a, 'a'), await this.side(jobId, b, 'b')];
    const summary = (s: Side): AttemptSummary => ({
      id: s.row.id,
      attempt_number: s.row.attempt_number,
      status: s.row.status,
      result_status: s.row.result_status,
      error: s.row.error,
      started_at: s.row.started_at,
      ended_at: s.row.ended_at,
      pricing: s.pricing,
      ...(includeReceipt ? { receipt: s.receipt } : {}),
    });
    const tokenDelta = Object.fromEntries(TOTAL_KEYS.map((k) => [k, sb.tokens[k] - sa.tokens[k]])) as TokenTotals;
    return {
      job_id: jobId,
      a: summary(sa),
      b: summary(sb),
      differences: {
        status: diff<string>(sa.row.status, sb.row.status),
        result_status: diff<string | null>(sa.row.result_status, sb.row.result_status),
        result_summary: diff(sa.row.result_summary, sb.row.result_summary),
        result_json: diff(sa.row.result_json, sb.row.result_json),
        git: diff(sa.row.git, sb.row.git),
        duration_ms: numeric(sa.duration_ms, sb.duration_ms),
        tokens: { ...diff(sa.tokens, sb.tokens), delta: tokenDelta },
        cost_usd: numeric(sa.cost_usd, sb.cost_usd, roundToMicro),
      },
    };
  }

  /** One attempt's figures as a comparison shows them (also the rows of a race's comparison, races/race-comparison.ts). */
  async side(jobId: string, attemptNumber: number, which = ''): Promise<Side> {
    const row = await this.attempts.byNumber(jobId, attemptNumber);
    if (!row) throw new NotFound(`attempt ${attemptNumber}${which ? ` (${which})` : ''} of job ${jobId} not found`);
    const receipt = (await this.store.ofAttempt(row.id)) ?? null;
    const { llm, cost } = receipt ?? (await this.store.liveSections(row.id));
    const counts = Object.fromEntries(TOKEN_FIELDS.map((f) => [f, llm[f]])) as TokenCounts;
    const duration = receipt ? receipt.timing.billable_ms : row.ended_at ? row.ended_at.getTime() - row.started_at.getTime() : null;
    return {
      row,
      receipt,
      tokens: { ...counts, total_tokens: totalTokens(counts), calls: llm.calls },
      cost_usd: cost.base_cost_usd,
      pricing: cost.pricing,
      duration_ms: duration,
    };
  }
}
