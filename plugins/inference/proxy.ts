import { PassThrough, type Readable } from 'node:stream';
import Boom from '@hapi/boom';
import type { InferenceConfig } from '../../core/config/schema.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { adapterFor } from './providers/index.ts';
import { SseSplitter, dataFrame, parseJson } from './providers/sse.ts';
import { noUsage, type ChatRequest, type ProviderAdapter, type TokenUsage } from './providers/types.ts';
import { type UpstreamClient, UpstreamTimedOut, type UpstreamAnswer } from './upstream.ts';
import type { Credentials } from './credentials.ts';
import type { ModelResolver } from './resolution.ts';
import type { CallOutcome, UsageRecorder } from './usage.ts';
import type { CallerScope } from './scopes.ts';

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

/** Replaces every occurrence of the credential (4 characters or more) in text sent back. */
export function maskWith(secret: string | null): (text: string) => string {
  if (!secret || secret.length < 4) return (text) => text;
  return (text) => text.split(secret).join('***');
}

/**
 * The chat-completions proxy: resolves the model, calls the target with its credential (which no
 * answer, log or error carries), passes streams through event by event as they arrive, maps silence
 * to 504 and broken upstreams to 502, and records every call's usage.
 */
export class ChatProxy {
  constructor(
    private readonly settings: InferenceConfig,
    private readonly models: ModelResolver,
    private readonly credentials: Credentials,
    private readonly client: UpstreamClient,
    private readonly usage: UsageRecorder,
  ) {}

  async complete(principal: Principal, scope: CallerScope, request: ChatRequest, clientGone: AbortSignal): Promise<ProxyReply> {
    const resolved = await this.models.resolve(request.model, scope);
    const { target } = resolved;
    const adapter = adapterFor(target.kind);
    const key = await this.credentials.value(target.credential_secret, target.org_id, `inference target ${target.name}`);
    const mask = maskWith(key);
    const idleMs = target.idle_timeout_ms ?? this.settings.idle_timeout_ms;
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const outcome = (o: Partial<CallOutcome> & { status: number }): CallOutcome => ({
      stream: request.stream === true,
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
        url: `${target.base_url}${adapter.chatPath}`,
        headers: adapter.headers(key),
        body: adapter.chatRequest(request, resolved.upstreamModel),
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
        stream: this.pipe(answer, adapter, request, idleMs, mask, clientGone, (o) =>
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
      const body =
        parsed === undefined
          ? { error: { message: mask(text), type: 'upstream_error', code: null } }
          : JSON.parse(mask(JSON.stringify(adapter.errorBody(answer.status, parsed))));
      await this.usage.record(principal, scope, resolved, outcome({ status: answer.status, error: `upstream answered ${answer.status}`, firstByteMs }));
      return { kind: 'json', status: answer.status, body, headers: passedHeaders(answer) };
    }
    if (parsed === undefined || parsed === null || typeof parsed !== 'object') {
      const failure = Boom.badGateway(`inference target ${target.name} answered ${answer.status} with a body that is not JSON`);
      await this.usage.record(principal, scope, resolved, outcome({ status: 502, error: failure.message, firstByteMs }));
      throw failure;
    }
    const translated = adapter.chatResponse(parsed);
    await this.usage.record(principal, scope, resolved, outcome({ status: answer.status, usage: translated.usage, firstByteMs }));
    return { kind: 'json', status: answer.status, body: JSON.parse(mask(JSON.stringify(translated.body))), headers: {} };
  }

  /** Forwards each upstream event the moment it is whole; a stream cut or gone silent ends with an error event. */
  private pipe(
    answer: UpstreamAnswer,
    adapter: ProviderAdapter,
    request: ChatRequest,
    idleMs: number,
    mask: (t: string) => string,
    clientGone: AbortSignal,
    done: (o: { status: number; usage: TokenUsage; error: string | null }) => void,
  ): PassThrough {
    const out = new PassThrough();
    const translator = adapter.stream(request);
    const splitter = new SseSplitter();
    const pump = async () => {
      let error: string | null = null;
      try {
        for await (const chunk of answer.chunks(idleMs)) {
          for (const event of splitter.push(chunk)) for (const frame of translator.event(event)) out.write(mask(frame));
        }
        if (!translator.complete) throw new Error('the upstream closed the stream before the answer was complete');
        error = translator.error;
      } catch (err) {
        error = clientGone.aborted ? 'the client went away' : (err as Error).message;
        if (!clientGone.aborted) {
          const type = err instanceof UpstreamTimedOut ? 'upstream_timeout' : 'upstream_error';
          out.write(dataFrame({ error: { message: mask(error), type, code: err instanceof UpstreamTimedOut ? 504 : 502 } }));
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
