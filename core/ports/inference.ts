import type { InjectionToken } from 'tsyringe';

/** The wire formats svc speaks to model providers: OpenAI-compatible chat completions, Anthropic messages. */
export const PROVIDER_KINDS = ['openai', 'anthropic'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

export const MANAGED_PREFIX = 'managed/';
export const isManagedModel = (model: string | null | undefined): boolean => typeof model === 'string' && model.startsWith(MANAGED_PREFIX);

/** Whom a harness runs for: the job's project (whose org owns the catalog it may use) and, for the proxy route, its job token. */
export interface ManagedModelRequest {
  /** `managed/<name>`. */
  model: string;
  projectId: string;
  orgId: string;
  /** The wire format the harness's CLI speaks. */
  speaks: ProviderKind;
  /** The attempt's job token (SVC_JOB_TOKEN): a proxied resolution hands this to the CLI instead of a provider key. */
  jobToken: string;
}

/**
 * What the harness is started with for a `managed/<name>` model.
 * - `via: 'proxy'`: the CLI talks to svc's chat-completions proxy with the job token as its key, so
 *   it never holds a provider credential, and every call counts on the attempt's receipt.
 * - `via: 'direct'`: the CLI speaks a wire format the proxy does not serve (Anthropic messages), so
 *   it gets the target's own base URL and credential; the caller must mask `apiKey` in the output.
 */
export interface ManagedModelResolution {
  model: string;
  provider: ProviderKind;
  baseUrl: string;
  apiKey: string;
  via: 'proxy' | 'direct';
  /** The environment the CLI reads, by the provider's usual variable names (OPENAI_* or ANTHROPIC_*). */
  env: Record<string, string>;
  /** Values that are secrets (the key): mask them in logs. */
  secrets: string[];
}

/**
 * Resolves `managed/<name>` models for jobs (the inference domain registers it). Unknown models are
 * 404 naming them; a model the job's project may not use is 404 too (never revealed); a harness that
 * speaks a format neither the proxy nor the target serves is 422.
 */
export interface ManagedModels {
  resolve(request: ManagedModelRequest): Promise<ManagedModelResolution>;
}

export const ManagedModelsToken = Symbol('ManagedModels') as InjectionToken<ManagedModels>;
