import type { InjectionToken } from 'tsyringe';
import type { Principal } from '../auth/principal.ts';

/** The wire formats svc speaks to model providers: OpenAI-compatible chat completions, Anthropic messages. */
export const PROVIDER_KINDS = ['openai', 'anthropic'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

export const MANAGED_PREFIX = 'managed/';
export const isManagedModel = (model: string | null | undefined): boolean => typeof model === 'string' && model.startsWith(MANAGED_PREFIX);

/**
 * The protocols svc's model gateway answers in, one per family of coding CLI: Anthropic messages
 * (`anthropic`), OpenAI Responses (`responses`), chat completions (`chat`; `openai` is its older
 * name, still accepted) and Gemini (`gemini`). Each reaches every target kind (docs/inference.md).
 */
export const GATEWAY_PROTOCOLS = ['anthropic', 'responses', 'chat', 'gemini'] as const;
export type GatewayProtocol = (typeof GATEWAY_PROTOCOLS)[number];

/** Whom a harness runs for: the job's project (whose org owns the catalog it may use) and, for the proxy route, its job token. */
export interface ManagedModelRequest {
  /** `managed/<name>`. */
  model: string;
  projectId: string;
  orgId: string;
  /** The protocol the harness's CLI speaks (`openai`: chat completions, as before). */
  speaks: GatewayProtocol | 'openai';
  /** The attempt's job token (SVC_JOB_TOKEN): a proxied resolution hands this to the CLI instead of a provider key. */
  jobToken: string;
}

/**
 * What the harness is started with for a `managed/<name>` model: svc's model gateway at the base
 * URL for the protocol its CLI speaks, with the job token as its key. The CLI never holds a
 * provider credential, every call counts on the attempt's receipt and against the job's budget,
 * whatever kind of target serves the model. (`via: 'direct'`, the target's own URL and key, is no
 * longer given: the gateway speaks every protocol.)
 */
export interface ManagedModelResolution {
  /** The model name the CLI sends: `managed/<name>`, which the gateway resolves. */
  model: string;
  /** The protocol the CLI speaks (chat for `openai`). */
  protocol: GatewayProtocol;
  /** The wire family of that protocol: anthropic for Anthropic messages, openai for the rest (gemini: openai). */
  provider: ProviderKind;
  baseUrl: string;
  /** The job token. */
  apiKey: string;
  via: 'proxy' | 'direct';
  /** The environment the CLI reads, by its usual variable names (OPENAI_..., ANTHROPIC_..., GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL). */
  env: Record<string, string>;
  /** Values that are secrets (the key): mask them in logs. */
  secrets: string[];
}

/**
 * Resolves `managed/<name>` models for jobs (the inference domain registers it). Unknown models are
 * 404 naming them; a model the job's project may not use is 404 too (never revealed); a protocol the
 * gateway does not speak is 422.
 */
export interface ManagedModels {
  resolve(request: ManagedModelRequest): Promise<ManagedModelResolution>;
}

export const ManagedModelsToken = Symbol('ManagedModels') as InjectionToken<ManagedModels>;

/** One chat turn sent to a model for another domain (distillation, summaries): plain text only. */
export interface CompletionRequest {
  model: string;
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  max_tokens?: number;
}

export interface CompletionAnswer {
  /** The model that answered (the provider's id). */
  model: string;
  text: string;
  usage: { input_tokens: number; output_tokens: number };
}

/**
 * A non-streamed completion through svc's model gateway for another domain, as the caller: it needs
 * `inference:use` where the call is made (a project of the org, or the org), is metered like any
 * call of that caller, and fails with the gateway's own errors (404 unknown model, 502/504 upstream).
 * Registered by the inference domain.
 */
export interface ModelCompletions {
  complete(principal: Principal, where: { orgId: string; projectId: string | null }, request: CompletionRequest): Promise<CompletionAnswer>;
}

export const ModelCompletionsToken = Symbol('ModelCompletions') as InjectionToken<ModelCompletions>;
