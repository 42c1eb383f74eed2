/** `svc job logs JOB_ID [--attempt N] [-f]`: an attempt's output lines, read page by page or followed live. */
import { intFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { CliError } from '../errors.ts';
import { apiRequest, seg } from '../http.ts';
import { note, write } from '../output.ts';
import { followEventStream } from '../sse.ts';

interface Line {
  seq: number;
  stream: string;
  line: string;
  at: string;
}
interface Attempt {
  id: string;
  attempt_number: number;
  status: string;
}

const WAIT_FOR_ATTEMPT_MS = 1000;
const PAGE = 1000;

/** A line for people: the process's own lines as they were, the worker's prefixed `svc:`. */
const show = (ctx: Context, l: Line) => write(ctx.json ? JSON.stringify(l) : l.stream === 'system' ? `svc: ${l.line}` : l.line);

/** Attempt N of the job, or its latest; with `wait`, polls until the job has one. */
async function attemptOf(ctx: Context, jobId: string, n: number | undefined, wait: boolean): Promise<Attempt> {
  const job = await apiRequest<{ project_id: string; phase: string }>(ctx, 'GET', `/jobs/${seg(jobId)}`);
  const base = `/projects/${seg(job.project_id)}/jobs/${seg(jobId)}/attempts`;
  if (n !== undefined) return apiRequest<Attempt>(ctx, 'GET', `${base}/${n}`);
  for (let waited = false; ; waited = true) {
    const page = await apiRequest<{ data: Attempt[] }>(ctx, 'GET', base, { query: { limit: 1 } });
    if (page.data[0]) return page.data[0];
    if (!wait) throw new CliError(`job ${jobId} has no attempts yet`, 'follow it with -f to wait for its first attempt');
    if (!waited) note(`svc: waiting for job ${jobId} to start…`);
    await new Promise((resolve) => setTimeout(resolve, WAIT_FOR_ATTEMPT_MS));
  }
}

/** Exit code: 0; with -f, 0 when the attempt succeeded and 1 when it ended otherwise. */
export async function runJobLogs(ctx: Context, args: string[], usage: string): Promise<number> {
  const { values, positionals } = parseCommand(args, { attempt: { type: 'string' }, follow: { type: 'boolean', short: 'f' } }, usage, { min: 1, max: 1 });
  const jobId = positionals[0];
  const attempt = await attemptOf(ctx, jobId, intFlag(values.attempt, 'attempt', usage), values.follow === true);
  const path = `/jobs/${seg(jobId)}/attempts/${seg(attempt.id)}/logs`;
  if (!values.follow) {
    for (let after = 0; ;) {
      const page = await apiRequest<{ data: Line[]; pagination: { has_more: boolean } }>(ctx, 'GET', path, { query: { limit: PAGE, after_seq: after } });
      for (const l of page.data) show(ctx, l);
      if (!page.pagination.has_more || page.data.length === 0) return 0;
      after = page.data[page.data.length - 1].seq;
    }
  }
  let ended: { status: string } | null = null;
  await followEventStream(ctx, `${path}/stream`, {
    onEvent: (event) => {
      if (event.event === 'log') show(ctx, JSON.parse(event.data));
      else if (event.event === 'end') ended = JSON.parse(event.data);
    },
    done: () => ended !== null,
    onReconnect: (n, reason) => note(`svc: ${reason}; reconnecting (try ${n})`),
  });
  const final = ended as { status: string } | null;
  if (!ctx.json) note(`svc: attempt ${attempt.attempt_number} ${final?.status ?? 'ended'}`);
  return final?.status === 'succeeded' ? 0 : 1;
}
