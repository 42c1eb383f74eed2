import { PassThrough } from 'node:stream';
import type { Request, ResponseToolkit, ResponseObject } from '@hapi/hapi';
import type { Logger } from 'pino';

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
export function openEventStream(request: Request, h: ResponseToolkit, log: EventLog, logger: Logger, what: string): ResponseObject {
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
        for (const event of batch) out.write(sseFrame(event));
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
