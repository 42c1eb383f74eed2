import type { ProviderKind } from '../../../core/ports/inference.ts';
import type { WireEvent } from './sse.ts';

/** Token counts of one call; the classes are disjoint (input excludes cache reads and writes; reasoning is part of output). */
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens: number;
}

export const noUsage = (): TokenUsage => ({ input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0 });

/** A chat-completions request body as clients send it (only what the proxy reads is typed). */
export interface ChatRequest {
  model: string;
  messages: Record<string, unknown>[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } & Record<string, unknown>;
  [key: string]: unknown;
}

/** Turns one upstream stream into chat-completion chunks, counting usage on the way. */
export interface StreamTranslator {
  /** The frames to send the client for one upstream event (often one, sometimes none). */
  event(event: WireEvent): string[];
  /** Whether the upstream said the answer is complete (a stream that ends before this was cut). */
  readonly complete: boolean;
  /** An error the upstream reported inside the stream. */
  readonly error: string | null;
  readonly usage: TokenUsage;
}

/** One wire format: how to address, authenticate, and translate to and from chat completions. */
export interface ProviderAdapter {
  kind: ProviderKind;
  description: string;
  /** Headers carrying the credential (and any version header the API wants). */
  headers(apiKey: string | null): Record<string, string>;
  /** Relative to the base URL (which, by each SDK's habit, includes `/v1` for openai and not for anthropic). */
  chatPath: string;
  modelsPath: string;
  /** Model ids from the provider's models endpoint answer. */
  modelIds(body: unknown): string[];
  chatRequest(request: ChatRequest, upstreamModel: string): unknown;
  /** A non-streamed answer as a chat.completion, and its usage. */
  chatResponse(body: unknown): { body: unknown; usage: TokenUsage };
  /** An upstream error body as the client gets it (credentials are masked by the caller). */
  errorBody(status: number, body: unknown): unknown;
  stream(request: ChatRequest): StreamTranslator;
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);
export { num as tokenCount };
