import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { storableText } from '../db/storable.ts';
import { type AddressGuard, hostOf } from './address-guard.ts';

/** Stored response bodies are cut to this many characters (spec limit). */
export const MAX_STORED_BODY = 4096;
/** A body longer than this is not read to its end: the connection is dropped instead. */
const MAX_READ_BYTES = 64 * 1024;

export interface Outcome {
  ok: boolean;
  status: number | null;
  body: string | null;
  error: string | null;
  durationMs: number;
}

/**
 * POSTs bodies (webhook deliveries, OAuth token refreshes) over keep-alive connections. Redirects are not followed (a 3xx is a
 * failed attempt); every connection resolves its host through the address guard.
 */
export class Transport {
  private readonly agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 256 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 256 }),
  };

  constructor(
    private readonly guard: AddressGuard,
    private readonly timeoutMs: number,
  ) {}

  async post(target: string, body: string, headers: Record<string, string>): Promise<Outcome> {
    const started = performance.now();
    const done = (o: Omit<Outcome, 'durationMs'>): Outcome => ({ ...o, durationMs: Math.round(performance.now() - started) });
    let url: URL;
    try {
      url = new URL(target);
      // Literal addresses skip the resolver, so they are checked here.
      if (isIP(hostOf(url))) await this.guard.check(url);
    } catch (err) {
      return done({ ok: false, status: null, body: null, error: (err as Error).message });
    }
    try {
      const { status, text } = await this.request(url, body, headers);
      // A receiver's NUL bytes, or a surrogate pair cut in two, would fail the batched record of every delivery beside it.
      return done({ ok: status >= 200 && status < 300, status, body: storableText(text.slice(0, MAX_STORED_BODY)), error: null });
    } catch (err) {
      return done({ ok: false, status: null, body: null, error: storableText((err as Error).message) });
    }
  }

  close(): void {
    this.agents['http:'].destroy();
    this.agents['https:'].destroy();
  }

  private request(url: URL, body: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
    const client = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = client.request(url, {
        method: 'POST',
        agent: this.agents[url.protocol as 'http:' | 'https:'],
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        lookup: this.guard.lookup,
      });
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const finish = () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        };
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_READ_BYTES) chunks.push(chunk);
          else {
            res.removeAllListeners('data');
            res.destroy();
            finish();
          }
        });
        res.on('end', finish);
        res.on('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
      });
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.end(body);
    });
  }
}
