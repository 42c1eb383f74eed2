/** Printing a log of numbered lines that the API pages and streams alike (a build run's, a deploy's). */
import type { Context } from '../config.ts';
import { CliError } from '../errors.ts';
import { note, write } from '../output.ts';
import { followEventStream } from '../sse.ts';

export interface LogLine {
  seq: number;
  stream: string;
  line: string;
}

/** One line: JSON with --json, else the text (svc's own lines prefixed `svc: `). */
export const showLogLine = (ctx: Context, l: LogLine): void => write(ctx.json ? JSON.stringify(l) : l.stream === 'system' ? `svc: ${l.line}` : l.line);

/** The page of a log's lines after `after_seq`, up to `limit` (the same route streams text when asked to follow). */
export type LogPage = (query: { after_seq: number; limit: number }) => Promise<{ data: LogLine[]; pagination?: { has_more: boolean } } | string>;

/** Every line of a log, page after page. */
export async function printLogPages(ctx: Context, pageAfter: LogPage): Promise<void> {
  for (let after = 0; ;) {
    const page = await pageAfter({ limit: 1000, after_seq: after });
    if (typeof page === 'string') throw new CliError('the server answered a page of log lines with text');
    for (const l of page.data) showLogLine(ctx, l);
    if (!page.pagination?.has_more || page.data.length === 0) return;
    after = page.data[page.data.length - 1].seq;
  }
}

/**
 * Follows the log at `path` (a URL with `follow=true`) as server-sent events, each line to `onLine`
 * (default: printed), resuming after a dropped connection, until its `end` event; returns that
 * event's data (null when the stream ended without one).
 */
export async function followLog<End>(ctx: Context, path: string, onLine: (l: LogLine) => void = (l) => showLogLine(ctx, l)): Promise<End | null> {
  let ended: End | null = null;
  await followEventStream(ctx, path, {
    onEvent: (event) => {
      if (event.event === 'log') onLine(JSON.parse(event.data));
      else if (event.event === 'end') ended = JSON.parse(event.data);
    },
    done: () => ended !== null,
    onReconnect: (n, reason) => note(`svc: ${reason}; reconnecting (try ${n})`),
  });
  return ended;
}
