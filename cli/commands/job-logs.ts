/**
 * `svc job logs JOB_ID [--attempt N] [-f]`: an attempt's output lines, read page by page or followed
 * live. On a workflow root, its steps' logs one step after another, each line labelled by its step.
 */
import { intFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { CliError } from '../errors.ts';
import { api, seg } from '../http.ts';
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
interface Job {
  id: string;
  project_id: string;
  phase: string;
  depth: number;
  hints: Record<string, unknown>;
  created_at: string;
}

const WAIT_FOR_ATTEMPT_MS = 1000;
const PAGE = 1000;
/** Phases after which a job starts no attempt of its own accord. */
const SETTLED = new Set(['done', 'cancelled']);

const getJob = (ctx: Context, jobId: string) => api(ctx).GET('/jobs/{job_id}', { params: { job_id: jobId } });
const isWorkflowRoot = (job: Job) => job.depth === 0 && typeof job.hints.workflow_name === 'string';

/** A line for people: the process's own lines as they were, the worker's prefixed `svc:`; a step's lines carry its name. */
function show(ctx: Context, l: Line, step: string | null): void {
  if (ctx.json) return write(JSON.stringify(step ? { step_name: step, ...l } : l));
  const text = l.stream === 'system' ? `svc: ${l.line}` : l.line;
  write(step ? `[${step}] ${text}` : text);
}

/**
 * Attempt N of the job, or its latest; with `wait`, polls until the job has one. Null when the job
 * settled without running (a skipped or cancelled step) and `wait` was asked.
 */
async function attemptOf(ctx: Context, job: Job, n: number | undefined, wait: boolean): Promise<Attempt | null> {
  if (n !== undefined)
    return api(ctx).GET('/projects/{project_id}/jobs/{job_id}/attempts/{attempt_number}', {
      params: { project_id: job.project_id, job_id: job.id, attempt_number: n },
    });
  for (let waited = false; ; waited = true) {
    const page = await api(ctx).GET('/projects/{project_id}/jobs/{job_id}/attempts', {
      params: { project_id: job.project_id, job_id: job.id },
      query: { limit: 1 },
    });
    if (page.data[0]) return page.data[0];
    if (!wait) throw new CliError(`job ${job.id} has no attempts yet`, 'follow it with -f to wait for its first attempt');
    if (waited && SETTLED.has((await getJob(ctx, job.id)).phase)) return null;
    if (!waited) note(`svc: waiting for job ${job.id} to start…`);
    await new Promise((resolve) => setTimeout(resolve, WAIT_FOR_ATTEMPT_MS));
  }
}

/** Prints an attempt's lines; with `follow`, streams them until it ends and answers how it ended. */
async function printAttempt(ctx: Context, jobId: string, attempt: Attempt, follow: boolean, step: string | null): Promise<string | null> {
  const path = `/jobs/${seg(jobId)}/attempts/${seg(attempt.id)}/logs`;
  if (!follow) {
    for (let after = 0; ;) {
      const page = await api(ctx).GET('/jobs/{job_id}/attempts/{attempt_id}/logs', {
        params: { job_id: jobId, attempt_id: attempt.id },
        query: { limit: PAGE, after_seq: after },
      });
      for (const l of page.data) show(ctx, l, step);
      if (!page.pagination?.has_more || page.data.length === 0) return null;
      after = page.data[page.data.length - 1].seq;
    }
  }
  let ended: { status: string } | null = null;
  await followEventStream(ctx, `${path}/stream`, {
    onEvent: (event) => {
      if (event.event === 'log') show(ctx, JSON.parse(event.data), step);
      else if (event.event === 'end') ended = JSON.parse(event.data);
    },
    done: () => ended !== null,
    onReconnect: (n, reason) => note(`svc: ${reason}; reconnecting (try ${n})`),
  });
  const status = (ended as { status: string } | null)?.status ?? 'ended';
  if (!ctx.json) note(`svc: ${step ? `step ${step}: ` : ''}attempt ${attempt.attempt_number} ${status}`);
  return status;
}

/** A workflow root's steps in the order they were laid out, each step's latest attempt; exit 1 when a followed step did not succeed. */
async function workflowLogs(ctx: Context, root: Job, follow: boolean): Promise<number> {
  const tree = await api(ctx).GET('/jobs/{job_id}/tree', { params: { job_id: root.id } });
  const steps = tree.children.map((c) => c.job).sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  let failed = false;
  for (const step of steps) {
    const name = typeof step.hints.step_name === 'string' ? step.hints.step_name : step.id;
    const attempt = await attemptOf(ctx, step, undefined, follow).catch((err) => {
      if (err instanceof CliError) return null;
      throw err;
    });
    if (!attempt) {
      if (!ctx.json) note(`svc: step ${name}: ${follow ? `${(await getJob(ctx, step.id)).phase} without running` : 'no attempt yet'}`);
      continue;
    }
    const status = await printAttempt(ctx, step.id, attempt, follow, name);
    if (status !== null && status !== 'succeeded') failed = true;
  }
  return follow && failed ? 1 : 0;
}

/** Exit code: 0; with -f, 0 when the attempt (every step of a workflow) succeeded and 1 when it ended otherwise. */
export async function runJobLogs(ctx: Context, args: string[], usage: string): Promise<number> {
  const { values, positionals } = parseCommand(args, { attempt: { type: 'string' }, follow: { type: 'boolean', short: 'f' } }, usage, { min: 1, max: 1 });
  const follow = values.follow === true;
  const n = intFlag(values.attempt, 'attempt', usage);
  const job = await getJob(ctx, positionals[0]);
  if (n === undefined && isWorkflowRoot(job)) return workflowLogs(ctx, job, follow);
  const attempt = await attemptOf(ctx, job, n, follow);
  if (!attempt) throw new CliError(`job ${job.id} ended (${(await getJob(ctx, job.id)).phase}) without an attempt`);
  const status = await printAttempt(ctx, job.id, attempt, follow, null);
  return status === null || status === 'succeeded' ? 0 : 1;
}
