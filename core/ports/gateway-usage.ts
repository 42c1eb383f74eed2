import type { InjectionToken } from 'tsyringe';

/**
 * Calls through the model gateway made outside any job (a user's or a service account's token),
 * read by billing for spend and usage: job calls reach the attempt's receipt already, so they are
 * left out here and never counted twice. The inference domain registers it.
 */

export interface GatewayTokens {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens: number;
}

/** One group of calls: one caller, one upstream model, one UTC day. */
export interface GatewayCallGroup extends GatewayTokens {
  principal_kind: 'user' | 'service_account';
  principal_id: string;
  /** The model the provider served (what prices are looked up by). */
  upstream_model: string;
  provider: string;
  /** YYYY-MM-DD (UTC). */
  day: string;
  calls: number;
  /** The group's latest call: what it is priced at. */
  last_at: Date;
}

/** One call, newest first in a listing. */
export interface GatewayCallRecord extends GatewayTokens {
  principal_kind: 'user' | 'service_account';
  principal_id: string;
  project_id: string | null;
  /** As the caller named it (`managed/<name>` or a provider's id). */
  model: string;
  upstream_model: string;
  provider: string;
  status: number;
  latency_ms: number;
  created_at: Date;
}

export interface GatewayUsage {
  /** The org's calls outside jobs since `since`, grouped by caller, upstream model and day. */
  groups(orgId: string, since: Date): Promise<GatewayCallGroup[]>;
  /** The newest of those calls, at most `limit`. */
  records(orgId: string, since: Date, limit: number): Promise<GatewayCallRecord[]>;
}

export const GatewayUsageToken = Symbol('GatewayUsage') as InjectionToken<GatewayUsage>;
