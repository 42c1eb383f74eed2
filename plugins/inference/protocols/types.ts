import type { ProviderKind } from '../../../core/ports/inference.ts';
import type { ChatRequest, StreamTranslator, TokenUsage } from '../providers/types.ts';
import type { TargetRow } from '../repository.ts';

/** The protocols the gateway answers in: what the calling CLI speaks (docs/inference.md, "Protocols"). */
export const CLIENT_PROTOCOLS = ['chat', 'anthropic', 'responses', 'gemini'] as const;
export type ClientProtocolName = (typeof CLIENT_PROTOCOLS)[number];

/** One call as the route hands it over: the model the caller named, its body, and whether it wants a stream. */
export interface ProtocolCall {
  model: string;
  body: Record<string, unknown>;
  stream: boolean;
  /** Client headers a native pass-through forwards (anthropic-beta). */
  forward?: Record<string, string>;
}

/** Consumes the chat-completion chunks of a translated stream and writes the caller's own events. */
export interface ChatStreamWriter {
  /** Frames for one chat.completion.chunk. */
  chunk(chunk: Record<string, any>): string[];
  /** Frames that close the answer, with the upstream's usage (when the chat stream said [DONE]). */
  end(usage: TokenUsage): string[];
}

/**
 * A protocol a CLI speaks to the gateway. A call to a target of its `native` kind passes through
 * (only the model is rewritten); any other goes through chat completions, the gateway's hub: the
 * request becomes a chat request (which the target's adapter translates on, as for the chat route),
 * and the chat answer or stream becomes the caller's.
 */
export interface ClientProtocol {
  name: ClientProtocolName;
  /** The target kind this protocol is (null: none, always translated). */
  native: ProviderKind | null;
  /** Whether a call to this target passes through (default: the target is of the `native` kind). */
  isNative?(target: TargetRow): boolean;
  /** Native only: the upstream path, relative to the base URL (default: the adapter's). */
  nativePath?: string;
  /** Native only: the body sent upstream. */
  nativeRequest(call: ProtocolCall, upstreamModel: string): unknown;
  /** Native only: the usage of a whole answer. */
  nativeUsage(body: unknown): TokenUsage;
  /** Native only: passes the upstream's own stream on, counting usage. */
  nativeStream(call: ProtocolCall): StreamTranslator;
  /** The call as a chat-completions request (400 naming the field it cannot carry). */
  toChat(call: ProtocolCall): ChatRequest;
  /** A whole chat.completion as the caller's answer; `usage` is the upstream's, exactly. */
  fromChat(chat: Record<string, any>, usage: TokenUsage, call: ProtocolCall): unknown;
  /** Writes a translated stream in the caller's events (null: the chat chunks go out as they are). */
  chatStream(call: ProtocolCall): ChatStreamWriter | null;
  /** An error answer in the caller's shape. */
  errorBody(status: number, message: string, type?: string): unknown;
  /** The frame that ends a started stream that failed (cut, silent, or refused mid-way). */
  streamError(message: string, type: string, status: number): string;
}
