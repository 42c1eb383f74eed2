/** Printing a log of numbered lines that the API pages and streams alike (a build run's, a deploy's). */
import type { Context } from '../config.ts';
import { apiRequest } from '../http.ts';
import { note, write } from '../output.ts';
import { followEventStream } from '../sse.ts';

export interface LogLine {
  seq: number;
  stream: string;
  line: string;
}

/** One line: JSON with --json, else the text (svc's own lines prefixed `svc: `). */
export const showLogLine = (ctx: Context, l: LogLine): void => write(ctx.json ? JSON.stringify(l) : l.stream === 'system' ? `svc: ${l.line}` : l.line);

/** Every line of the log at `path`, page after page (`query` narrows it). */
export async function printLogPages(ctx: Context, path: string, query: Record<string, string | undefined> = {}): Promise<void> {
  for (let after = 0; ;) {
    const page = await apiRequest<{ data: LogLine[]; pagination: { has_more: boolean } }>(ctx, 'GET', path, {
      query: { ...query, limit: 1000, after_seq: after },
    });
    for (const l of page.data) showLogLine(ctx, l);
    if (!page.pagination.has_more || page.data.length === 0) return;
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
