/**
 * Model prices and the arithmetic of costing usage with them; shared by receipts (jobs) and rate
 * cards (billing).
 *
 * PRICES is the built-in table: USD per million tokens, meant as providers' public list prices
 * (standard tier) as of late 2025, written from memory and NOT verified against the providers' price
 * pages (no network where it was written): placeholders. It is the seed of the first rate card
 * (`builtin-2025-11`, see docs/billing.md), and what receipts are priced with when no billing plugin
 * is loaded. Receipts name the card they used (`cost.price_table`) and the entry each model matched
 * (`priced_as`), so an old receipt stays explainable after prices change.
 *
 * Token classes are disjoint: `input_tokens` excludes cache reads and cache writes; reasoning tokens
 * are part of `output_tokens` and are billed as output (never again on their own).
 */
export const PRICE_TABLE_ID = 'builtin-2025-11';

export interface ModelPrice {
  input: number;
  output: number;
  cache_read: number;
  /** Providers without a cache-write surcharge: the input price. */
  cache_write: number;
  /** Reasoning tokens (part of output_tokens) when priced apart from output; absent: the output price. */
  reasoning?: number;
}

export const PRICE_CLASSES = ['input', 'output', 'cache_read', 'cache_write', 'reasoning'] as const;

const p = (input: number, output: number, cache_read: number, cache_write = input): ModelPrice => ({ input, output, cache_read, cache_write });

/** Keys are lower-case model ids; a variant priced differently from its family is listed on its own. */
export const PRICES: Readonly<Record<string, ModelPrice>> = Object.freeze({
  'claude-opus-4-5': p(5, 25, 0.5, 6.25),
  'claude-opus-4': p(15, 75, 1.5, 18.75),
  'claude-sonnet-4': p(3, 15, 0.3, 3.75),
  'claude-3-7-sonnet': p(3, 15, 0.3, 3.75),
  'claude-3-5-sonnet': p(3, 15, 0.3, 3.75),
  'claude-haiku-4-5': p(1, 5, 0.1, 1.25),
  'claude-3-5-haiku': p(0.8, 4, 0.08, 1),
  'gpt-5': p(1.25, 10, 0.125),
  'gpt-5-mini': p(0.25, 2, 0.025),
  'gpt-5-nano': p(0.05, 0.4, 0.005),
  'gpt-4.1': p(2, 8, 0.5),
  'gpt-4.1-mini': p(0.4, 1.6, 0.1),
  'gpt-4.1-nano': p(0.1, 0.4, 0.025),
  'gpt-4o': p(2.5, 10, 1.25),
  'gpt-4o-mini': p(0.15, 0.6, 0.075),
  o3: p(2, 8, 0.5),
  'o3-pro': p(20, 80, 20),
  'o4-mini': p(1.1, 4.4, 0.275),
  'gemini-2.5-pro': p(1.25, 10, 0.31),
  'gemini-2.5-flash': p(0.3, 2.5, 0.075),
});

export interface PriceMatch {
  /** The table entry that matched. */
  id: string;
  price: ModelPrice;
}

/** Where a prefix may end inside a longer id: dated snapshots (`-20250514`), aliases (`-latest`), tags (`@…`, `:…`). */
const BOUNDARY = new Set(['-', '@', ':']);

/**
 * The price of a model id: by exact id, then by the longest table id the model starts with up to a
 * boundary (`claude-sonnet-4-5-20250929` → `claude-sonnet-4`, `gpt-4o-mini-2024-07-18` → `gpt-4o-mini`).
 * Case is ignored, and so is a `vendor/` prefix (`anthropic/claude-sonnet-4`). Null when unpriced.
 */
export function priceOf(model: string, prices: Readonly<Record<string, ModelPrice>> = PRICES): PriceMatch | null {
  const id = model
    .trim()
    .toLowerCase()
    .replace(/^[^/]*\//, '');
  if (Object.hasOwn(prices, id)) return { id, price: prices[id] };
  let best: string | null = null;
  for (const key of Object.keys(prices)) {
    if (id.length > key.length && id.startsWith(key) && BOUNDARY.has(id[key.length]) && (best === null || key.length > best.length)) best = key;
  }
  return best === null ? null : { id: best, price: prices[best] };
}

export interface BillableTokens {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens?: number;
}

/**
 * Cost in micro-USD (millionths of a dollar), unrounded: tokens × USD per million tokens. Reasoning
 * tokens are part of output: billed at the output price unless the model prices them apart.
 */
export function costMicroUsd(price: ModelPrice, t: BillableTokens): number {
  const reasoning = price.reasoning === undefined ? 0 : Math.min(t.reasoning_tokens ?? 0, t.output_tokens);
  return (
    t.input_tokens * price.input +
    (t.output_tokens - reasoning) * price.output +
    reasoning * (price.reasoning ?? price.output) +
    t.cache_read_tokens * price.cache_read +
    t.cache_write_tokens * price.cache_write
  );
}

/** Micro-USD to USD, rounded to the micro-dollar (six decimals): receipts keep sub-cent precision; invoices round sums. */
export const microToUsd = (micro: number): number => Math.round(micro) / 1e6;

/** An amount kept to the micro-unit (six decimals), as receipts are. */
export const roundToMicro = (amount: number): number => microToUsd(amount * 1e6);
