import Joi from 'joi';
import type { Request } from '@hapi/hapi';
import { listQuerySchema } from './lists.ts';
import { timestamp } from './schemas.ts';
import type { SseEvent } from './sse.ts';

/** Lines a page of a log holds at most. */
const MAX_LOG_PAGE = 1000;

/** The query of a log kept by seq (an attempt's, a build run's, a deploy's): a page of lines after a cursor. */
export const logPageQuery = listQuerySchema.keys({
  limit: Joi.number().integer().min(1).max(MAX_LOG_PAGE).default(100).description(`lines per page, 1 to ${MAX_LOG_PAGE}`),
  after_seq: Joi.number().integer().min(0).default(0).description('only lines with a greater seq (a cursor: the last seq read)'),
});

/** The same, or the log as a live stream: `follow` (or Accept: text/event-stream), resumed after `last_event_id`. */
export const followedLogQuery = logPageQuery.keys({
  follow: Joi.boolean().default(false).description('stream as server-sent events (also chosen by Accept: text/event-stream)'),
  last_event_id: Joi.number().integer().min(0).description('with follow: resume after this seq (the Last-Event-ID header wins)'),
});

export interface LogPageQuery {
  limit: number;
  offset: number;
  after_seq: number;
}

/** A line of such a log, from one of `streams`. */
export const logLineSchema = (label: string, streams: string[], streamDescription?: string) =>
  Joi.object({
    seq: Joi.number().integer().min(1).required(),
    stream: (streamDescription ? Joi.string().description(streamDescription) : Joi.string()).valid(...streams).required(),
    line: Joi.string().allow('').required(),
    at: timestamp.required(),
  }).label(label);

/** Whether the caller asked for the stream rather than a page: `follow`, or Accept: text/event-stream. */
export const wantsStream = (request: Request, follow: boolean): boolean => follow || String(request.headers.accept ?? '').includes('text/event-stream');

/** A log's lines after a seq as `log` events (id = seq, data = the line), for core/http/sse.ts. */
export const lineEvents =
  (read: (afterSeq: number) => Promise<{ seq: number }[]>) =>
  async (afterSeq: number): Promise<SseEvent[]> =>
    (await read(afterSeq)).map((l) => ({ id: l.seq, type: 'log', data: l }));
