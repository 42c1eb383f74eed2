import { readFile } from 'node:fs/promises';
import type { Context } from '../config.ts';
import { jsonObjectFlag, parseCommand } from '../args.ts';
import { CliError, UsageError } from '../errors.ts';
import { apiRequest, seg } from '../http.ts';
import { printJson, printObject, write } from '../output.ts';
import { runDefinitions } from './manifest-definitions.ts';
import { requireProject } from './manifest.ts';

export const WORKFLOW_USAGE = `usage: svc workflow <command> [flags]

  list [--limit N] [--offset N]   workflows in the project's current manifest
  show NAME                       one workflow: settings and steps
  invoke NAME [--input JSON | --input-file F] [--wait]
                                  start a run: a root job and one job per step; --wait blocks
                                  (up to 55 s) for the result; exits 1 when the run is cancelled

The project comes from --project, else the profile's project.

Examples:
  svc workflow invoke review --input '{"pr": 42}' --wait
  svc job logs ROOT_JOB_ID -f                 (follow a run that outlives --wait)`;

/** Below the CLI's 60 s request timeout, so the server's answer always arrives. */
const CLI_WAIT_SECONDS = 55;

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
  const path = `/projects/${seg(requireProject(ctx, WORKFLOW_USAGE))}/workflows/${seg(positionals[0])}/invoke`;
  const query = values.wait ? { wait: true, wait_seconds: CLI_WAIT_SECONDS } : undefined;
  const body = await apiRequest<Invocation>(ctx, 'POST', path, { body: input === undefined ? {} : { input }, query });
  if (ctx.json) printJson(body);
  else {
    printObject(ctx, body, ['job_id', 'status']);
    for (const step of body.step_jobs ?? []) {
      const after = step.depends_on?.length ? `  (after ${step.depends_on.join(', ')})` : '';
      write(`  ${step.step_name}: ${step.job_id}${after}`);
    }
    if (body.result_json !== undefined) write(`result_json: ${JSON.stringify(body.result_json, null, 2)}`);
    else if (values.wait) write('still running: the wait ran out');
  }
  return body.status === 'cancelled' ? 1 : 0;
}

export const runWorkflow = (ctx: Context, args: string[]): Promise<number> =>
  args[0] === 'invoke' ? invoke(ctx, args.slice(1)) : runDefinitions(ctx, args, 'workflows', WORKFLOW_USAGE);
