import { PassThrough } from 'node:stream';
import type { Request, ResponseToolkit, ResponseObject } from '@hapi/hapi';
import type { Logger } from 'pino';
import { SharedReads } from '../shared-reads.ts';

/** A comment line now and then keeps proxies from closing a quiet stream. */
export const KEEP_ALIVE_MS = 15_000;

export interface SseEvent {
  /** Absent on a closing event, so a client resuming later still resumes after the last entry. */
  id?: number | string;
  type: string;
  data: unknown;
}

/** One server-sent event: `id`, `event`, and the JSON data on one line. */
export const sseFrame = (e: SseEvent): string => `${e.id === undefined ? '' : `id: ${e.id}\n`}event: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`;

/** `Last-Event-ID` (a reconnecting EventSource sends it), else `?last_event_id=`, else 0. */
export function resumeAfter(request: Request): number {
  const raw = request.headers['last-event-id'] ?? (request.query as Record<string, unknown>).last_event_id;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

/** What an append-only log streamed as server-sent events needs: news, the end, and reads after an id. */
export interface EventLog {
  /**
   * Names the log (`attempt-log:<id>`): the streams of one log then share each read (one query
   * per new entry, however many follow it). Every read must depend on nothing but the key.
   */
  key?: string;
  /** Calls `wake` whenever new entries may have been committed; returns the way to stop. */
  subscribe(wake: () => void): () => void;
  /** Whether nothing more will be appended (decided before reading, so the read holds everything). */
  ended(): Promise<boolean>;
  /** Entries after `afterId`, oldest first, in batches (an empty batch: nothing more for now). */
  after(afterId: number): Promise<SseEvent[]>;
  /** Sent once after the last entry when the log has ended (an `end` event without an id, say). */
  closing?(): Promise<string | null>;
}

/**
 * Streams an event log as `text/event-stream`: what is logged after `Last-Event-ID`, then each new
 * entry as `log.subscribe` announces its commit (the one shared LISTEN per bus: an idle stream holds
 * no database connection and sends no query); ends once the log has ended and everything up to
 * then is sent, and stops when the client goes away. `what` names the log in warnings.
 */
export function openEventStream(request: Request, h: ResponseToolkit, given: EventLog, logger: Logger, what: string): ResponseObject {
  const log = given.key === undefined ? given : sharedLog(given, given.key);
  const out = new PassThrough();
  let closed = false;
  let wake: () => void = () => undefined;
  const unsubscribe = log.subscribe(() => wake());
  const close = () => {
    if (closed) return;
    closed = true;
    unsubscribe();
    wake();
    out.end();
  };
  request.raw.req.on('close', close);

  const pump = async () => {
    let last = resumeAfter(request);
    out.write(': stream open\n\n');
    while (!closed) {
      const signalled = new Promise<void>((resolve) => {
        wake = resolve;
      });
      const ended = await log.ended();
      for (let batch = await log.after(last); batch.length > 0 && !closed; batch = await log.after(last)) {
        for (const event of batch) out.write(renderedFrame(event));
        last = Number(batch[batch.length - 1].id);
      }
      if (ended) {
        const closing = await log.closing?.();
        if (closing && !closed) out.write(closing);
        break;
      }
      // Idle, a stream costs a timer: the comment line keeps proxies from closing it, without a query.
      const timer = setInterval(() => out.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
      await signalled;
      clearInterval(timer);
    }
  };
  pump()
    .catch((err) => logger.warn({ err }, `${what} stream failed`))
    .finally(close);

  return h.response(out).type('text/event-stream').header('cache-control', 'no-cache').header('content-encoding', 'identity').header('x-accel-buffering', 'no');
}

const reads = new SharedReads();
/** An event's frame, rendered once for all the streams that share its read. */
const frames = new WeakMap<SseEvent, string>();

function renderedFrame(event: SseEvent): string {
  let frame = frames.get(event);
  if (frame === undefined) frames.set(event, (frame = sseFrame(event)));
  return frame;
}

/** The log with its reads shared among the streams that follow the same key. */
function sharedLog(log: EventLog, key: string): EventLog {
  const { closing } = log;
  return {
    subscribe: (wake) => log.subscribe(wake),
    ended: () => reads.read(`${key} ended`, () => log.ended()),
    after: (afterId) => reads.read(`${key} after ${afterId}`, () => log.after(afterId)),
    ...(closing ? { closing: () => reads.read(`${key} closing`, () => closing.call(log)) } : {}),
  };
}
