import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { type AddressGuard, hostOf } from '../../core/http/address-guard.ts';

/** The upstream did not answer, or broke off (502). */
export class UpstreamFailed extends Error {}
/** The upstream stayed silent past a timeout (504). */
export class UpstreamTimedOut extends Error {}

export interface UpstreamCall {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: unknown;
  /** Until the response headers arrive. */
  requestTimeoutMs: number;
  /** Org targets go through the address guard; system targets and configured providers do not. */
  guarded: boolean;
  /** Aborts the call (the client went away). */
  signal?: AbortSignal;
}

/** An answer whose headers have arrived; its body is read with `each` (every wait bounded by the idle timeout). */
export interface UpstreamAnswer {
  status: number;
  headers: IncomingMessage['headers'];
  /**
   * Hands each chunk of the body to `onChunk` as it arrives, in the same turn (no promise per chunk);
   * settles when the body is whole, rejects when it breaks off, stays silent too long, or `onChunk` throws.
   */
  each(idleTimeoutMs: number, onChunk: (chunk: Buffer) => void): Promise<void>;
  /** The whole body as text, at most `maxBytes` of it. */
  text(idleTimeoutMs: number, maxBytes?: number): Promise<string>;
  /** Stops reading and closes the connection. */
  abort(): void;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** Calls model providers over HTTP(S) without buffering: the body is read as it arrives. */
export class UpstreamClient {
  private readonly agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 256 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 256 }),
  };

  constructor(private readonly guard: AddressGuard) {}

  async send(call: UpstreamCall): Promise<UpstreamAnswer> {
    const url = new URL(call.url);
    if (call.guarded && isIP(hostOf(url)))
      await this.guard.check(url).catch((e: Error) => Promise.reject(new UpstreamFailed(`upstream refused: ${e.message}`)));
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    const client = url.protocol === 'https:' ? https : http;
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = client.request(url, {
        method: call.method,
        agent: this.agents[url.protocol as 'http:' | 'https:'],
        headers: {
          accept: 'application/json, text/event-stream',
          ...(body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
          ...call.headers,
        },
        ...(call.guarded ? { lookup: this.guard.lookup } : {}),
      });
      const timer = setTimeout(
        () => req.destroy(new UpstreamTimedOut(`the upstream did not answer within ${call.requestTimeoutMs} ms`)),
        call.requestTimeoutMs,
      );
      const onAbort = () => req.destroy(new UpstreamFailed('the client went away'));
      call.signal?.addEventListener('abort', onAbort, { once: true });
      req.on('response', (r) => {
        clearTimeout(timer);
        call.signal?.removeEventListener('abort', onAbort);
        resolve(r);
      });
      req.on('error', (err) => {
        clearTimeout(timer);
        call.signal?.removeEventListener('abort', onAbort);
        reject(
          err instanceof UpstreamTimedOut || err instanceof UpstreamFailed ? err : new UpstreamFailed(`the upstream could not be reached: ${describe(err)}`),
        );
      });
      req.end(body);
    });
    return answer(res, call.signal);
  }

  close(): void {
    this.agents['http:'].destroy();
    this.agents['https:'].destroy();
  }
}

function describe(err: Error & { code?: string }): string {
  return err.code ? `${err.code}${err.message && !err.message.includes(err.code) ? ` (${err.message})` : ''}` : err.message;
}

function answer(res: IncomingMessage, signal?: AbortSignal): UpstreamAnswer {
  const abort = () => res.destroy();
  signal?.addEventListener('abort', abort, { once: true });
  res.once('close', () => signal?.removeEventListener('abort', abort));

  function each(idleTimeoutMs: number, onChunk: (chunk: Buffer) => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const idle = setTimeout(() => fail(new UpstreamTimedOut(`the upstream sent nothing for ${idleTimeoutMs} ms`)), idleTimeoutMs);
      const onData = (chunk: Buffer) => {
        idle.refresh();
        try {
          onChunk(chunk);
        } catch (err) {
          fail(err);
        }
      };
      const onEnd = () => {
        settle();
        resolve();
      };
      const onError = (err: Error) => fail(new UpstreamFailed(`the upstream broke off: ${describe(err)}`));
      // A body cut short (the connection dropped before its declared end) closes without 'end' or an error.
      const onClose = () => fail(new UpstreamFailed('the upstream closed the connection before the answer was complete'));
      function settle() {
        clearTimeout(idle);
        res.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      }
      function fail(err: unknown) {
        settle();
        if (!res.complete) res.destroy();
        reject(err);
      }
      res.on('data', onData).once('end', onEnd).once('error', onError).once('close', onClose);
    });
  }

  return {
    status: res.statusCode ?? 0,
    headers: res.headers,
    each,
    async text(idleTimeoutMs: number, maxBytes = MAX_BODY_BYTES): Promise<string> {
      const parts: Buffer[] = [];
      let size = 0;
      await each(idleTimeoutMs, (chunk) => {
        size += chunk.length;
        if (size > maxBytes) throw new UpstreamFailed(`the upstream answer is larger than ${maxBytes} bytes`);
        parts.push(chunk);
      });
      return Buffer.concat(parts).toString('utf8');
    },
    abort,
  };
}
