import type { PriceBook } from '../../core/ports/billing.ts';
import type { GatewayCallGroup, GatewayCallRecord, GatewayTokens, GatewayUsage } from '../../core/ports/gateway-usage.ts';
import { costMicroUsd, microToUsd, priceOf } from '../../domain/pricing/prices.ts';

/** Costs of gateway calls made outside jobs. */
export interface GatewayFigures extends GatewayTokens {
  calls: number;
  base_cost_usd: number;
  /** Calls billed in the org's currency, summed in it. */
  billed_cost: number;
  /** USD of calls for which no exchange rate was in force. */
  unconverted_usd: number;
  /** Calls of a model the rate card has no price for (counted at 0). */
  unpriced_calls: number;
}

export interface GatewaySpend {
  totals: GatewayFigures;
  by_caller: (GatewayFigures & { principal_kind: string; principal_id: string })[];
  by_model: (GatewayFigures & { model: string })[];
  by_day: (GatewayFigures & { day: string })[];
}

const zero = (): GatewayFigures => ({
  calls: 0,
  base_cost_usd: 0,
  billed_cost: 0,
  unconverted_usd: 0,
  unpriced_calls: 0,
  input_tokens: 0,
  output_tokens: 0,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  reasoning_tokens: 0,
});

const roundMoney = (f: GatewayFigures): GatewayFigures => ({
  ...f,
  base_cost_usd: microToUsd(f.base_cost_usd * 1e6),
  billed_cost: microToUsd(f.billed_cost * 1e6),
  unconverted_usd: microToUsd(f.unconverted_usd * 1e6),
});

/**
 * Prices each group with the rate card and exchange rate in force at its latest call (as a receipt
 * is priced when its attempt ends), by the model the provider served; a model without a price
 * counts 0 and is flagged, as receipts do (fail-open).
 */
async function priced(orgId: string, group: GatewayCallGroup, prices: PriceBook, currency: string): Promise<GatewayFigures> {
  const pricing = await prices.forOrg(orgId, group.last_at);
  const match = pricing.card ? priceOf(group.upstream_model, pricing.card.models) : null;
  const usd = match ? microToUsd(costMicroUsd(match.price, group)) : 0;
  const convertible = pricing.rate_to_usd !== null && pricing.currency === currency;
  return {
    calls: group.calls,
    base_cost_usd: usd,
    billed_cost: convertible ? usd / pricing.rate_to_usd! : 0,
    unconverted_usd: convertible ? 0 : usd,
    unpriced_calls: match ? 0 : group.calls,
    input_tokens: group.input_tokens,
    output_tokens: group.output_tokens,
    cache_read_tokens: group.cache_read_tokens,
    cache_write_tokens: group.cache_write_tokens,
    reasoning_tokens: group.reasoning_tokens,
  };
}

function add(into: GatewayFigures, f: GatewayFigures): void {
  for (const key of Object.keys(into) as (keyof GatewayFigures)[]) into[key] += f[key];
}

function breakdown<K extends string>(rows: { key: string; figures: GatewayFigures }[], name: K) {
  const groups = new Map<string, GatewayFigures>();
  for (const { key, figures } of rows) {
    if (!groups.has(key)) groups.set(key, zero());
    add(groups.get(key)!, figures);
  }
  return [...groups].map(([key, f]) => ({ [name]: key, ...roundMoney(f) }) as GatewayFigures & Record<K, string>);
}

/** What the org's gateway calls outside jobs cost in the window; empty when no inference domain is loaded. */
export async function gatewaySpend(usage: GatewayUsage | null, prices: PriceBook, orgId: string, since: Date, currency: string): Promise<GatewaySpend> {
  const groups = usage ? await usage.groups(orgId, since) : [];
  const rows = await Promise.all(groups.map(async (g) => ({ group: g, figures: await priced(orgId, g, prices, currency) })));
  const totals = zero();
  for (const r of rows) add(totals, r.figures);
  const callers = breakdown(
    rows.map((r) => ({ key: `${r.group.principal_kind}:${r.group.principal_id}`, figures: r.figures })),
    'caller',
  );
  return {
    totals: roundMoney(totals),
    by_caller: callers.map(({ caller, ...f }) => {
      const [principal_kind, principal_id] = [caller.slice(0, caller.indexOf(':')), caller.slice(caller.indexOf(':') + 1)];
      return { principal_kind, principal_id, ...f };
    }),
    by_model: breakdown(
      rows.map((r) => ({ key: r.group.upstream_model, figures: r.figures })),
      'model',
    ),
    by_day: breakdown(
      rows.map((r) => ({ key: r.group.day, figures: r.figures })),
      'day',
    ),
  };
}

export async function gatewayRecords(usage: GatewayUsage | null, orgId: string, since: Date, limit: number): Promise<GatewayCallRecord[]> {
  return usage ? usage.records(orgId, since, limit) : [];
}
