/** `svc pipeline run | runs | logs | approve | cancel`: pipeline runs over the API in docs/pipelines.md. */
import { intFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import type { Schemas } from '../../client/index.ts';
import { api, seg } from '../http.ts';
import { formatFields, formatTable, note, printJson, printList, write, type Column } from '../output.ts';
import { followEventStream, type SseEvent } from '../sse.ts';
import { requireProject } from './manifest.ts';
import { inputsFromFlags, startRun } from './pipeline-inputs.ts';

export const RUN_COMMANDS = ['run', 'runs', 'logs', 'approve', 'cancel'];

interface Step {
  name: string;
  job_id: string;
  status: string;
  depends_on?: string[];
  approval?: boolean;
}

export interface Run {
  id: string;
  project_id: string;
  status: string;
  error_message?: string | null;
  steps: Step[];
  [key: string]: unknown;
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
const RUN_FIELDS = [
  'id',
  'pipeline_name',
  'status',
  'ref',
  'git_sha',
  'env_name',
  'inputs',
  'only_steps',
  'error_message',
  'cancel_reason',
  'created_by',
  'created_at',
  'started_at',
  'completed_at',
];
const RUN_COLUMNS: Column[] = [
  { key: 'id' },
  { key: 'status' },
  { key: 'ref' },
  { key: 'env_name', header: 'ENV' },
  { key: 'created_at', header: 'CREATED' },
  { key: 'completed_at', header: 'COMPLETED' },
];
const STEP_COLUMNS: Column[] = [
  { key: 'name', header: 'STEP' },
  { key: 'status' },
  { key: 'job_id', header: 'JOB' },
  {
    key: 'depends_on',
    header: 'AFTER',
    format: (v, row) => [...((v as string[] | undefined) ?? []), ...(row.approval ? ['(approval)'] : [])].join(', ') || '-',
  },
];

/** The run's fields, then its steps as an indented table. */
export function formatRun(run: Run): string {
  const record = run as Record<string, unknown>;
  const head = formatFields(RUN_FIELDS.filter((key) => key in record).map((key) => [key, record[key]]));
  const steps = formatTable((run.steps ?? []) as unknown as Record<string, unknown>[], STEP_COLUMNS)
    .split('\n')
    .map((line) => `  ${line}`);
  return [head, 'steps:', ...steps].join('\n');
}

const showRun = (ctx: Context, run: Run) => (ctx.json ? printJson(run) : write(formatRun(run)));

/** One event for people: `[build] running`, `[build] <log line>`, `run failed: <message>`. */
export function eventLine(event: SseEvent): string {
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(event.data);
  } catch {
    return `${event.event}: ${event.data}`;
  }
  const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  switch (event.event) {
    case 'run.status':
      return `run ${text(data.status)}${data.error_message ? `: ${text(data.error_message)}` : ''}`;
    case 'step.status':
      return `[${text(data.step_name)}] ${text(data.status)}`;
    case 'step.log':
      return `[${text(data.step_name)}] ${text(data.line)}`;
    default:
      return `${event.event}: ${event.data}`;
  }
}

/** One event for scripts: `{"id", "event", "data"}` on one line (data parsed when it is JSON). */
export function eventJson(event: SseEvent): string {
  let data: unknown = event.data;
  try {
    data = JSON.parse(event.data);
  } catch {
    // not JSON: kept as the text the server sent
  }
  return JSON.stringify({ id: event.id ?? null, event: event.event, data });
}

/**
 * Read a run's (or one step's) event stream to its end, printing each event unless `quiet`.
 * Returns the final status seen: the run's, or with `step` that step's (undefined if none arrived).
 * A connection that ends early is resumed until the run has ended with every step seen ended
 * (the server's own rule, as far as the events tell), or until the followed step has ended.
 */
export async function followRun(ctx: Context, runId: string, opts: { step?: string; quiet?: boolean } = {}): Promise<string | undefined> {
  const path = `/pipeline-runs/${seg(runId)}${opts.step === undefined ? '' : `/steps/${seg(opts.step)}`}/stream`;
  let runStatus: string | undefined;
  const steps = new Map<string, string>();
  await followEventStream(ctx, path, {
    onEvent: (event) => {
      if (!opts.quiet) write(ctx.json ? eventJson(event) : eventLine(event));
      const data = parseData(event);
      if (typeof data?.status !== 'string') return;
      if (event.event === 'run.status') {
        if (data.status === 'awaiting_approval' && runStatus !== 'awaiting_approval')
          note(`svc: run ${runId} waits for approval: \`svc pipeline approve ${runId}\` releases it`);
        runStatus = data.status;
      } else if (event.event === 'step.status' && typeof data.step_name === 'string') steps.set(data.step_name, data.status);
    },
    done: () => {
      if (opts.step !== undefined) return TERMINAL.has(steps.get(opts.step) ?? '');
      return runStatus !== undefined && TERMINAL.has(runStatus) && [...steps.values()].every((s) => TERMINAL.has(s));
    },
    onReconnect: (attempt, reason) => note(`svc: ${reason}; reconnecting (try ${attempt})`),
  });
  return opts.step === undefined ? runStatus : steps.get(opts.step);
}

function parseData(event: SseEvent): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(event.data);
    return value && typeof value === 'object' ? value : undefined;
  } catch {
    return undefined;
  }
}

const failedExit = (status: string | undefined) => (status === 'failed' || status === 'cancelled' ? 1 : 0);

/** --only build,test: step names separated by commas. */
export function onlyFlag(value: string | undefined, usage: string): string[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(',').map((name) => name.trim());
  if (names.some((name) => name === '')) throw new UsageError(`--only takes step names separated by commas, got "${value}"`, usage);
  return names;
}

const RUN_OPTIONS = {
  ref: { type: 'string' },
  env: { type: 'string' },
  inputs: { type: 'string' },
  input: { type: 'string', multiple: true },
  only: { type: 'string' },
  wait: { type: 'boolean' },
} as const;

export async function runPipelineRuns(ctx: Context, command: string, args: string[], usage: string): Promise<number> {
  const project = () => requireProject(ctx, usage);
  switch (command) {
    case 'run': {
      const { values: v, positionals } = parseCommand(args, RUN_OPTIONS, usage, { min: 1, max: 1 });
      const inputs = inputsFromFlags(v.inputs, v.input as string[] | undefined, usage);
      const body = { ref: v.ref, env: v.env, inputs, only_steps: onlyFlag(v.only, usage) };
      const run = await startRun(ctx, requireProject(ctx, usage), positionals[0], body, usage);
      if (!v.wait) return (showRun(ctx, run), 0);
      if (ctx.json) {
        await followRun(ctx, run.id, { quiet: true });
        const ended = await api(ctx).GET('/projects/{project_id}/runs/{run_id}', { params: { project_id: run.project_id, run_id: run.id } });
        printJson(ended);
        return failedExit(ended.status);
      }
      write(formatRun(run));
      return failedExit(await followRun(ctx, run.id));
    }
    case 'runs': {
      const options = { status: { type: 'string' }, limit: { type: 'string' }, offset: { type: 'string' } } as const;
      const { values: v, positionals } = parseCommand(args, options, usage, { min: 1, max: 1 });
      const query = {
        status: v.status as Schemas['PipelineRun']['status'],
        limit: intFlag(v.limit, 'limit', usage),
        offset: intFlag(v.offset, 'offset', usage),
      };
      const body = await api(ctx).GET('/projects/{project_id}/pipelines/{name}/runs', { params: { project_id: project(), name: positionals[0] }, query });
      printList(ctx, body, RUN_COLUMNS, 'runs');
      return 0;
    }
    case 'logs': {
      const options = { step: { type: 'string' }, follow: { type: 'boolean', short: 'f' } } as const;
      const { values: v, positionals } = parseCommand(args, options, usage, { min: 1, max: 1 });
      const runId = positionals[0];
      if (v.follow) return failedExit(await followRun(ctx, runId, { step: v.step }));
      const run = await api(ctx).GET('/projects/{project_id}/runs/{run_id}', { params: { project_id: project(), run_id: runId } });
      const steps = v.step === undefined ? run.steps : run.steps.filter((s) => s.name === v.step);
      if (v.step !== undefined && steps.length === 0)
        throw new UsageError(`run ${runId} has no step "${v.step}" (steps: ${run.steps.map((s) => s.name).join(', ')})`, usage);
      const ended = (v.step !== undefined || TERMINAL.has(run.status)) && steps.every((s) => TERMINAL.has(s.status));
      if (ended) {
        await followRun(ctx, runId, { step: v.step });
        return 0;
      }
      showRun(ctx, run);
      note(`svc: run ${runId} is ${run.status}; \`svc pipeline logs ${runId}${v.step === undefined ? '' : ` --step ${v.step}`} -f\` follows its events`);
      return 0;
    }
    case 'approve':
    case 'cancel': {
      const flag = command === 'approve' ? 'comment' : 'reason';
      const { values, positionals } = parseCommand(args, { [flag]: { type: 'string' } }, usage, { min: 1, max: 1 });
      const params = { run_id: positionals[0] };
      showRun(
        ctx,
        command === 'approve'
          ? await api(ctx).POST('/pipeline-runs/{run_id}/approve', { params, body: { comment: values.comment } })
          : await api(ctx).POST('/pipeline-runs/{run_id}/cancel', { params, body: { reason: values.reason } }),
      );
      return 0;
    }
    default:
      throw new UsageError(`unknown pipeline command "${command}"`, usage);
  }
}
