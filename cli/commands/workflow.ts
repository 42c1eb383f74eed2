import { readFile } from 'node:fs/promises';
import type { Context } from '../config.ts';
import { jsonObjectFlag, parseCommand } from '../args.ts';
import { CliError, UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { note, printJson, printObject, write } from '../output.ts';
import { runDefinitions } from './manifest-definitions.ts';
import { requireProject } from './manifest.ts';

export const WORKFLOW_USAGE = `usage: svc workflow <command> [flags]

  list [--limit N] [--offset N]   workflows in the project's current manifest
  show NAME                       one workflow: settings and steps
  invoke NAME [--input JSON | --input-file F] [--wait]
                                  start a run: a root job and one job per step; --wait follows it
                                  (up to 55 s), printing each step's progress on stderr, then the
                                  result, or how to follow it further; exits 1 when the run is cancelled

The project comes from --project, else the profile's project.

Examples:
  svc workflow invoke review --input '{"pr": 42}' --wait
  svc job logs ROOT_JOB_ID -f                 (follow a run that outlives --wait)`;

/** How long --wait follows a run before it says how to go on following it. */
const CLI_WAIT_SECONDS = 55;
const POLL_MS = 1_000;
const FINISHED = new Set(['done', 'cancelled']);

async function inputOf(values: { input?: string; 'input-file'?: string }): Promise<Record<string, unknown> | undefined> {
  if (values.input !== undefined && values['input-file'] !== undefined) throw new UsageError('pass --input or --input-file, not both', WORKFLOW_USAGE);
  let text = values.input;
  if (values['input-file'] !== undefined) {
    try {
      text = await readFile(values['input-file'], 'utf8');
    } catch (error) {
      throw new CliError(`cannot read ${values['input-file']}: ${(error as Error).message}`);
    }
  }
  return jsonObjectFlag(text, 'the input', WORKFLOW_USAGE);
}

interface Invocation {
  job_id: string;
  status: string;
  step_jobs?: { job_id: string; step_name: string; depends_on?: string[] }[];
  result_json?: unknown;
}

async function invoke(ctx: Context, args: string[]): Promise<number> {
  const options = { input: { type: 'string' }, 'input-file': { type: 'string' }, wait: { type: 'boolean' } } as const;
  const { values, positionals } = parseCommand(args, options, WORKFLOW_USAGE, { min: 1, max: 1 });
  const input = await inputOf(values);
  const project = requireProject(ctx, WORKFLOW_USAGE);
  let body: Invocation = await api(ctx).POST('/projects/{project_id}/workflows/{name}/invoke', {
    params: { project_id: project, name: positionals[0] },
    body: input === undefined ? {} : { input },
  });
  if (!ctx.json) {
    printObject(ctx, body, ['job_id', 'status']);
    for (const step of body.step_jobs ?? []) {
      const after = step.depends_on?.length ? `  (after ${step.depends_on.join(', ')})` : '';
      write(`  ${step.step_name}: ${step.job_id}${after}`);
    }
  }
  if (values.wait) body = await waitFor(ctx, project, body);
  if (ctx.json) printJson(body);
  else if (body.result_json !== undefined) write(`result_json: ${JSON.stringify(body.result_json, null, 2)}`);
  return body.status === 'cancelled' ? 1 : 0;
}

const phaseOf = async (ctx: Context, jobId: string) => (await api(ctx).GET('/jobs/{job_id}', { params: { job_id: jobId } })).phase;

async function latestResult(ctx: Context, project: string, jobId: string): Promise<unknown> {
  const attempts = await api(ctx).GET('/projects/{project_id}/jobs/{job_id}/attempts', { params: { project_id: project, job_id: jobId }, query: { limit: 1 } });
  return attempts.data[0]?.result_json ?? null;
}

/**
 * Follows the run until its root job finishes or CLI_WAIT_SECONDS pass, printing each phase change
 * of the root and its steps on stderr as it sees it. Finished: the status and result_json (the
 * root's latest attempt, or step name → each step's); else how to follow the run from here.
 */
async function waitFor(ctx: Context, project: string, invocation: Invocation): Promise<Invocation> {
  const steps = invocation.step_jobs ?? [];
  const labels = new Map([[invocation.job_id, 'run'], ...steps.map((s) => [s.job_id, s.step_name] as [string, string])]);
  const seen = new Map<string, string>([[invocation.job_id, invocation.status]]);
  const deadline = Date.now() + CLI_WAIT_SECONDS * 1000;
  for (;;) {
    for (const [jobId, label] of labels) {
      const phase = await phaseOf(ctx, jobId);
      if (seen.get(jobId) !== phase) note(`[${label}] ${phase}`);
      seen.set(jobId, phase);
    }
    const status = seen.get(invocation.job_id)!;
    if (FINISHED.has(status)) {
      const result_json = steps.length
        ? Object.fromEntries(await Promise.all(steps.map(async (s) => [s.step_name, await latestResult(ctx, project, s.job_id)] as const)))
        : await latestResult(ctx, project, invocation.job_id);
      return { ...invocation, status, result_json };
    }
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  // `job logs` on the root follows every step in turn (a single-step run runs on its root).
  note(`svc: still running after ${CLI_WAIT_SECONDS} s; follow it with: svc job logs ${invocation.job_id} -f   (its steps: svc job tree ${invocation.job_id})`);
  return { ...invocation, status: seen.get(invocation.job_id)! };
}

export const runWorkflow = (ctx: Context, args: string[]): Promise<number> =>
  args[0] === 'invoke' ? invoke(ctx, args.slice(1)) : runDefinitions(ctx, args, 'workflows', WORKFLOW_USAGE);
