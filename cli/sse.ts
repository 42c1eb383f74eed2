/** Reading `text/event-stream` responses: an incremental parser and a follower that reconnects with Last-Event-ID. */
import type { Context } from './config.ts';
import { ApiError, CliError } from './errors.ts';
import { apiUrlFor, errorMessage, unauthorizedHint } from './http.ts';

export interface SseEvent {
  /** The last event id seen on the stream when this event was dispatched (ids persist across events). */
  id?: string;
  /** `message` when the server sent no `event:` line. */
  event: string;
  /** The `data:` lines joined with `\n`. */
  data: string;
}

/**
 * The event-stream format (WHATWG HTML, "server-sent events") fed chunk by chunk: lines may end in
 * CRLF, LF or CR and may be split anywhere, UTF-8 included; `:` lines are comments; an event is
 * dispatched at a blank line, and one left without its blank line when the stream ends is dropped.
 */
export class SseParser {
  /** The id of the last event dispatched: what a reconnection sends as Last-Event-ID. */
  lastEventId: string | undefined;
  /** The server's `retry:` in ms, when it sent one. */
  retryMs: number | undefined;
  private readonly decoder = new TextDecoder('utf-8');
  private buffer = '';
  private started = false;
  private type = '';
  private data: string[] = [];
  /** The `id:` seen in the event being read; it becomes `lastEventId` when the event is dispatched. */
  private idBuffer: string | undefined;

  constructor(lastEventId?: string) {
    this.lastEventId = lastEventId;
    this.idBuffer = lastEventId;
  }

  /** Parse a chunk; returns the events it completed. */
  feed(chunk: Uint8Array | string): SseEvent[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    if (!this.started && this.buffer !== '') {
      this.started = true;
      if (this.buffer.charCodeAt(0) === 0xfeff) this.buffer = this.buffer.slice(1);
    }
    const events: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer[i];
      if (ch !== '\n' && ch !== '\r') continue;
      // A CR at the very end may be the first half of a CRLF split across chunks: wait for the next one.
      if (ch === '\r' && i === this.buffer.length - 1) break;
      const event = this.line(this.buffer.slice(start, i));
      if (event) events.push(event);
      if (ch === '\r' && this.buffer[i + 1] === '\n') i++;
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /** The connection ended: a CR held back as a possible CRLF half ends its line after all; an unfinished event is dropped. */
  end(): SseEvent[] {
    const events = this.feed(this.decoder.decode());
    if (this.buffer.endsWith('\r')) {
      const event = this.line(this.buffer.slice(0, -1));
      if (event) events.push(event);
    }
    this.reset();
    return events;
  }

  /** Forget the unfinished line and event (a broken connection); the last event id stays for the reconnection. */
  reset(): void {
    this.decoder.decode();
    this.buffer = '';
    this.started = false;
    this.type = '';
    this.data = [];
    this.idBuffer = this.lastEventId;
  }

  private line(line: string): SseEvent | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.type = value;
    else if (field === 'id' && !value.includes('\0')) this.idBuffer = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
    return undefined;
  }

  private dispatch(): SseEvent | undefined {
    this.lastEventId = this.idBuffer;
    const event = this.data.length === 0 ? undefined : { id: this.lastEventId || undefined, event: this.type || 'message', data: this.data.join('\n') };
    this.type = '';
    this.data = [];
    return event;
  }
}

export interface FollowOptions {
  /** Each event, in order, across reconnections. */
  onEvent(event: SseEvent): void;
  /** True once everything that matters has arrived: the end of the stream is then final instead of a drop. */
  done(): boolean;
  /** Resume after this event id. */
  lastEventId?: string;
  /** First wait before reconnecting, unless the server sent `retry:` (default 1000 ms; grows per failed try). */
  retryMs?: number;
  /** Reconnections in a row that bring no event before giving up (default 5). */
  maxRetries?: number;
  /** Told about each reconnection (the CLI notes it on stderr). */
  onReconnect?(attempt: number, reason: string): void;
}

const MAX_RETRY_DELAY_MS = 10_000;

/**
 * GET an event stream and read it to its end, reconnecting with `Last-Event-ID` when it ends or
 * breaks before `done()`. An error status answers at once (ApiError); a connection that cannot be
 * opened at all is a CliError; so is a stream that keeps failing without bringing anything.
 */
export async function followEventStream(ctx: Context, path: string, options: FollowOptions): Promise<void> {
  const parser = new SseParser(options.lastEventId);
  const maxRetries = options.maxRetries ?? 5;
  let failures = 0;
  for (let connection = 0; ; connection++) {
    let progressed = false;
    let reason: string;
    try {
      progressed = await readOnce(ctx, path, parser, options, connection > 0);
      reason = 'the stream ended early';
    } catch (error) {
      if (error instanceof ApiError && error.statusCode < 500) throw error;
      if (connection === 0 && error instanceof CliError) throw error;
      progressed = (error as { progressed?: boolean }).progressed ?? false;
      reason = error instanceof Error ? error.message : String(error);
    }
    if (options.done()) return;
    failures = progressed ? 1 : failures + 1;
    if (failures > maxRetries) {
      throw new CliError(`lost the event stream ${path} after ${maxRetries} reconnection attempts: ${reason}`, 'run the command again to resume');
    }
    options.onReconnect?.(failures, reason);
    const delay = Math.min((parser.retryMs ?? options.retryMs ?? 1000) * failures, MAX_RETRY_DELAY_MS);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

/** One connection: returns whether it delivered an event (comments do not count); a read error carries `progressed`. */
async function readOnce(ctx: Context, path: string, parser: SseParser, options: FollowOptions, resuming: boolean): Promise<boolean> {
  const url = apiUrlFor(ctx.apiUrl, path);
  const headers: Record<string, string> = { accept: 'text/event-stream', 'cache-control': 'no-cache' };
  if (ctx.token) headers.authorization = `Bearer ${ctx.token}`;
  if (parser.lastEventId) headers['last-event-id'] = parser.lastEventId;
  let response: Response;
  try {
    response = await fetch(url, { headers });
  } catch (error) {
    const err = error as { message?: string; cause?: { message?: string; code?: string } };
    const detail = err.cause?.message || err.cause?.code || err.message || String(error);
    throw new CliError(`cannot ${resuming ? 'reconnect to' : 'reach'} the svc API at ${ctx.apiUrl} (GET ${url.pathname}): ${detail}`);
  }
  if (!response.ok) throw await streamError(ctx, response);
  const type = response.headers.get('content-type') ?? '';
  if (!type.startsWith('text/event-stream')) {
    await response.body?.cancel();
    throw new CliError(`GET ${url.pathname} answered ${type || 'no content type'}, not an event stream (HTTP ${response.status})`);
  }
  let progressed = false;
  const deliver = (events: SseEvent[]) => {
    for (const event of events) options.onEvent(event);
    progressed ||= events.length > 0;
  };
  try {
    for await (const chunk of response.body ?? []) deliver(parser.feed(chunk));
    deliver(parser.end());
  } catch (error) {
    parser.reset();
    throw Object.assign(new Error(`the connection broke: ${(error as Error).message}`), { progressed });
  }
  return progressed;
}

/** The API's `{statusCode, error, message}` for a stream that did not open. */
async function streamError(ctx: Context, response: Response): Promise<ApiError> {
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const hint = response.status === 401 ? unauthorizedHint(ctx) : undefined;
  return new ApiError(response.status, errorMessage(body, text, response.statusText || `HTTP ${response.status}`), body, hint);
}
