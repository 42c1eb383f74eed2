import { PassThrough, type Readable } from 'node:stream';
import Boom from '@hapi/boom';
import type { InferenceConfig } from '../../core/config/schema.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { adapterFor } from './providers/index.ts';
import { SseSplitter, parseJson } from './providers/sse.ts';
import { noUsage, type ChatRequest, type ProviderAdapter, type StreamTranslator, type TokenUsage } from './providers/types.ts';
import { type UpstreamClient, UpstreamTimedOut, type UpstreamAnswer } from './upstream.ts';
import type { Credentials } from './credentials.ts';
import type { ModelResolver, ResolvedModel } from './resolution.ts';
import type { CallOutcome, UsageRecorder } from './usage.ts';
import type { CallerScope } from './scopes.ts';
import type { BudgetGate } from './budget-gate.ts';
import { chatProtocol } from './protocols/chat.ts';
import { anthropicProtocol } from './protocols/anthropic.ts';
import { translatedStream } from './protocols/translated-stream.ts';
import type { ClientProtocol, ProtocolCall } from './protocols/types.ts';

/** What the route sends back: a JSON answer (the upstream's status included), or a stream of server-sent events. */
export type ProxyReply = { kind: 'json'; status: number; body: unknown; headers: Record<string, string> } | { kind: 'stream'; stream: Readable };

/** Upstream error bodies are read up to this size. */
const MAX_ERROR_BYTES = 64 * 1024;
/** Upstream headers passed on with an error answer (rate limits tell the client when to come back). */
const PASSED_HEADERS = [
  'retry-after',
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  'anthropic-ratelimit-requests-reset',
];
/** Client headers a native Anthropic call forwards (features Claude Code turns on per request). */
const FORWARDED_ANTHROPIC = ['anthropic-beta'];

/** Replaces every occurrence of the credential (4 characters or more) in text sent back. */
export function maskWith(secret: string | null): (text: string) => string {
  if (!secret || secret.length < 4) return (text) => text;
  return (text) => text.split(secret).join('***');
}

/** How one call goes upstream: the adapter, the path, the body, and how the answer comes back to the caller. */
interface Route {
  adapter: ProviderAdapter;
  /** Relative to the target's base URL. */
  path: string;
  body: unknown;
  headers: Record<string, string>;
  /** A whole answer in the caller's shape, with its usage. */
  answer(parsed: unknown): { body: unknown; usage: TokenUsage };
  /** An upstream error body in the caller's shape. */
  error(status: number, parsed: unknown): unknown;
  stream(): StreamTranslator;
}

/**
 * The model gateway: answers each caller in its own protocol (chat completions, Anthropic messages,
 * OpenAI Responses, Gemini), passes a call through when the target speaks that protocol and
 * translates it through chat completions when not. It resolves the model, checks the job's budget,
 * calls the target with its credential (which no answer, log or error carries), passes streams on
 * event by event as they arrive, maps silence to 504 and broken upstreams to 502, and records every
 * call's usage (the upstream's own counts) on the same path.
 */
export class InferenceGateway {
  constructor(
    private readonly settings: InferenceConfig,
    private readonly models: ModelResolver,
    private readonly credentials: Credentials,
    private readonly client: UpstreamClient,
    private readonly usage: UsageRecorder,
    private readonly budget: BudgetGate,
  ) {}

  /** `POST /inference/v1/chat/completions`. */
  complete(principal: Principal, scope: CallerScope, request: ChatRequest, clientGone: AbortSignal): Promise<ProxyReply> {
    return this.call(principal, scope, chatProtocol, { model: request.model, body: request, stream: request.stream === true }, clientGone);
  }

  async call(principal: Principal, scope: CallerScope, protocol: ClientProtocol, call: ProtocolCall, clientGone: AbortSignal): Promise<ProxyReply> {
    // The budget check (job tokens) and the model's resolution are independent reads: one round trip's wait, not two.
    const [resolved] = await Promise.all([this.models.resolve(call.model, scope), this.budget.check(principal)]);
    const { target } = resolved;
    const route = this.route(protocol, call, resolved);
    // An org's own target is called at the base URL the org chose: the org gets only what its jobs could.
    const key = await this.credentials.value(target.credential_secret, target.org_id, `inference target ${target.name}`, target.org_id ? 'tenant' : 'server');
    const mask = maskWith(key);
    const idleMs = target.idle_timeout_ms ?? this.settings.idle_timeout_ms;
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const outcome = (o: Partial<CallOutcome> & { status: number }): CallOutcome => ({
      stream: call.stream,
      error: null,
      usage: noUsage(),
      latencyMs: elapsed(),
      firstByteMs: null,
      ...o,
    });

    let answer: UpstreamAnswer;
    try {
      answer = await this.client.send({
        method: 'POST',
        url: `${target.base_url}${route.path}`,
        headers: { ...route.headers, ...route.adapter.headers(key) },
        body: route.body,
        requestTimeoutMs: target.request_timeout_ms ?? this.settings.request_timeout_ms,
        guarded: target.org_id !== null,
        signal: clientGone,
      });
    } catch (err) {
      const failure = upstreamError(err, target.name, mask);
      await this.usage.record(principal, scope, resolved, outcome({ status: failure.output.statusCode, error: failure.message }));
      throw failure;
    }
    const firstByteMs = elapsed();
    const isStream = String(answer.headers['content-type'] ?? '').includes('text/event-stream');
    if (answer.status >= 200 && answer.status < 300 && isStream) {
      return {
        kind: 'stream',
        stream: this.pipe(answer, protocol, route.stream(), idleMs, mask, clientGone, (o) =>
          this.usage.recordLater(principal, scope, resolved, outcome({ ...o, firstByteMs })),
        ),
      };
    }

    let text: string;
    try {
      text = await answer.text(idleMs, answer.status >= 300 ? MAX_ERROR_BYTES : undefined);
    } catch (err) {
      const failure = upstreamError(err, target.name, mask);
      await this.usage.record(principal, scope, resolved, outcome({ status: failure.output.statusCode, error: failure.message, firstByteMs }));
      throw failure;
    }
    const parsed = parseJson(text);
    if (answer.status < 200 || answer.status >= 300) {
      const body = parsed === undefined ? protocol.errorBody(answer.status, mask(text)) : JSON.parse(mask(JSON.stringify(route.error(answer.status, parsed))));
      await this.usage.record(principal, scope, resolved, outcome({ status: answer.status, error: `upstream answered ${answer.status}`, firstByteMs }));
      return { kind: 'json', status: answer.status, body, headers: passedHeaders(answer) };
    }
    if (parsed === undefined || parsed === null || typeof parsed !== 'object') {
      const failure = Boom.badGateway(`inference target ${target.name} answered ${answer.status} with a body that is not JSON`);
      await this.usage.record(principal, scope, resolved, outcome({ status: 502, error: failure.message, firstByteMs }));
      throw failure;
    }
    const translated = route.answer(parsed);
    await this.usage.record(principal, scope, resolved, outcome({ status: answer.status, usage: translated.usage, firstByteMs }));
    return { kind: 'json', status: answer.status, body: JSON.parse(mask(JSON.stringify(translated.body))), headers: {} };
  }

  /** Gemini's `countTokens` (free, not metered): the model resolved like a call's, the count estimated (a token per four characters). */
  async estimateGeminiTokens(scope: CallerScope, call: ProtocolCall): Promise<ProxyReply> {
    await this.models.resolve(call.model, scope);
    const { contents, systemInstruction, tools } = call.body;
    return { kind: 'json', status: 200, body: { totalTokens: Math.ceil(JSON.stringify({ contents, systemInstruction, tools }).length / 4) }, headers: {} };
  }

  /**
   * Anthropic's `count_tokens` (free, not metered): an Anthropic target counts (its answer passes
   * through); for any other target the gateway estimates, a token per four characters of the
   * system prompt, messages and tools as JSON (`estimated: true` says so).
   */
  async countTokens(scope: CallerScope, call: ProtocolCall, clientGone: AbortSignal): Promise<ProxyReply> {
    const resolved = await this.models.resolve(call.model, scope);
    const { target } = resolved;
    if (target.kind !== 'anthropic') {
      const { system, messages, tools } = call.body;
      const input_tokens = Math.ceil(JSON.stringify({ system, messages, tools }).length / 4);
      return { kind: 'json', status: 200, body: { input_tokens, estimated: true }, headers: {} };
    }
    const adapter = adapterFor(target.kind);
    const key = await this.credentials.value(target.credential_secret, target.org_id, `inference target ${target.name}`, target.org_id ? 'tenant' : 'server');
    const mask = maskWith(key);
    const headers: Record<string, string> = {};
    for (const name of FORWARDED_ANTHROPIC) if (call.forward?.[name]) headers[name] = call.forward[name];
    try {
      const answer = await this.client.send({
        method: 'POST',
        url: `${target.base_url}${adapter.chatPath}/count_tokens`,
        headers: { ...headers, ...adapter.headers(key) },
        body: { ...call.body, model: resolved.upstreamModel },
        requestTimeoutMs: target.request_timeout_ms ?? this.settings.request_timeout_ms,
        guarded: target.org_id !== null,
        signal: clientGone,
      });
      const text = await answer.text(target.idle_timeout_ms ?? this.settings.idle_timeout_ms, MAX_ERROR_BYTES);
      const parsed = parseJson(text);
      const body = parsed === undefined ? anthropicProtocolError(answer.status, mask(text)) : JSON.parse(mask(JSON.stringify(parsed)));
      return { kind: 'json', status: answer.status, body, headers: answer.status >= 300 ? passedHeaders(answer) : {} };
    } catch (err) {
      throw upstreamError(err, target.name, mask);
    }
  }

  /** Native when the target speaks the caller's protocol; else through chat completions and the target's adapter. */
  private route(protocol: ClientProtocol, call: ProtocolCall, resolved: ResolvedModel): Route {
    const adapter = adapterFor(resolved.target.kind);
    if (protocol.isNative ? protocol.isNative(resolved.target) : protocol.native === resolved.target.kind) {
      const headers: Record<string, string> = {};
      if (protocol.native === 'anthropic') for (const name of FORWARDED_ANTHROPIC) if (call.forward?.[name]) headers[name] = call.forward[name];
      return {
        adapter,
        path: protocol.nativePath ?? adapter.chatPath,
        headers,
        body: protocol.nativeRequest(call, resolved.upstreamModel),
        answer: (parsed) => ({ body: parsed, usage: protocol.nativeUsage(parsed) }),
        error: (_status, parsed) => (protocol.name === 'chat' ? adapter.errorBody(_status, parsed) : parsed),
        stream: () => protocol.nativeStream(call),
      };
    }
    const chat = protocol.toChat(call);
    return {
      adapter,
      path: adapter.chatPath,
      headers: {},
      body: adapter.chatRequest(chat, resolved.upstreamModel),
      answer: (parsed) => {
        const translated = adapter.chatResponse(parsed);
        return { body: protocol.fromChat(translated.body as Record<string, any>, translated.usage, call), usage: translated.usage };
      },
      error: (status, parsed) => {
        const error = (parsed as { error?: { message?: unknown; type?: unknown } } | null)?.error;
        const message = typeof error?.message === 'string' ? error.message : JSON.stringify(parsed);
        return protocol.errorBody(status, message, typeof error?.type === 'string' ? error.type : undefined);
      },
      stream: () => translatedStream(adapter.stream(chat), protocol.chatStream(call)),
    };
  }

  /** Forwards each upstream event the moment it is whole; a stream cut or gone silent ends with an error event in the caller's protocol. */
  private pipe(
    answer: UpstreamAnswer,
    protocol: ClientProtocol,
    translator: StreamTranslator,
    idleMs: number,
    mask: (t: string) => string,
    clientGone: AbortSignal,
    done: (o: { status: number; usage: TokenUsage; error: string | null }) => void,
  ): PassThrough {
    const out = new PassThrough();
    const splitter = new SseSplitter();
    const pump = async () => {
      let error: string | null = null;
      try {
        await answer.each(idleMs, (chunk) => {
          for (const event of splitter.push(chunk)) for (const frame of translator.event(event)) out.write(mask(frame));
        });
        if (!translator.complete) throw new Error(translator.error ?? 'the upstream closed the stream before the answer was complete');
        error = translator.error;
      } catch (err) {
        error = clientGone.aborted ? 'the client went away' : (err as Error).message;
        if (!clientGone.aborted) {
          const timedOut = err instanceof UpstreamTimedOut;
          out.write(protocol.streamError(mask(error), timedOut ? 'upstream_timeout' : 'upstream_error', timedOut ? 504 : 502));
        }
      } finally {
        out.end();
        done({ status: 200, usage: translator.usage, error });
      }
    };
    void pump();
    return out;
  }
}

const anthropicProtocolError = (status: number, message: string) => anthropicProtocol.errorBody(status, message);

/** A call that got no usable answer: 504 for silence, 502 for anything else (the message masked). */
function upstreamError(err: unknown, targetName: string, mask: (t: string) => string): Boom.Boom {
  if (Boom.isBoom(err)) return err;
  const message = mask((err as Error).message);
  return err instanceof UpstreamTimedOut
    ? Boom.gatewayTimeout(`inference target ${targetName}: ${message}`)
    : Boom.badGateway(`inference target ${targetName}: ${message}`);
}

function passedHeaders(answer: UpstreamAnswer): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of PASSED_HEADERS) {
    const value = answer.headers[name];
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}
