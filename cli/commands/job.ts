import { intFlag, jsonObjectFlag, parseCommand, requireFlag } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import type { Schemas } from '../../client/index.ts';
import { api } from '../http.ts';
import { printDone, printJson, printList, printObject, write, type Column } from '../output.ts';
import { runAttachments } from './job-files.ts';
import { runJobLogs } from './job-logs.ts';
import { runJobDiff } from './job-diff.ts';
import { runJobChoose, runJobRace, runRaceCompare } from './job-race.ts';
import {
  JOB_FIELDS,
  jobColumnsFor,
  formatContext,
  pullRequestLine,
  workLine,
  formatNested,
  formatReceipt,
  formatTree,
  relationLine,
  section,
} from './job-views.ts';

export const JOB_USAGE = `usage: svc job <command> [flags]

  create --description TEXT [--title T] [--priority 0-4] [--issue-type T] [--label L]... [--parent ID]
         [--review-required none|human|agent] [--harness H] [--model M] [--harness-profile NAME] [--env ENV_NAME]
         [--resource-ref URI]... [--defer-until ISO] [--due-at ISO] [--phase idea|backlog|ready]
         [--hints JSON] [--git JSON]
  list [--phase P] [--label L] [--assignee A] [--issue-type T] [--priority N] [--parent ID]
       [--due-before ISO] [--limit N] [--offset N]    jobs that ended early show why (ENDED BECAUSE)
  get ID                               the job (show ID is the same)
  update ID [--title T] [--description TEXT] [--priority N] [--phase P] [--issue-type T] [--label L]...
            [--assignee A | --unassign] [--review-required R] [--defer-until ISO|none] [--due-at ISO|none] [--hints JSON]
  cancel ID [--reason R]               cancel the job from any open phase; a running attempt is stopped
  context ID                           the job, its parent, children, relations and latest attempt
  tree ID                              the job and its descendants
  claim ID                             start an attempt (prints the attempt id and lease token)
  release ID --attempt ATTEMPT_ID --token LEASE_TOKEN
  submit ID --summary S                send the active job to review
  approve ID [--comment C]
  reject ID --reason R
  pr ID [--title T] [--body B] [--base BRANCH] [--draft]
                                       propose the job's pushed work as a pull request on the code host
                                       (a job in review or done; its result summary is the body unless given)
  deps list ID
  deps add ID --on RELATED_ID [--type blocked_by|blocks|waits_for|conditional_blocks]   (default blocked_by)
  deps remove ID RELATED_ID
  attachments list ID [--limit N] [--offset N]
  attachments add ID FILE [--name N] [--mime TYPE]      name defaults to the file's, type to its extension's
  attachments get ID NAME [--output FILE]              the bytes to FILE or stdout (--json: the metadata)
  attachments remove ID NAME
  attempts ID [N] [--limit N] [--offset N]   the job's attempts (newest first), or attempt number N
  receipt ID [--attempt ATTEMPT_ID]    execution receipt of the latest (or the given) attempt
  logs ID [--attempt N] [-f|--follow]  output of the latest (or Nth) attempt; -f streams it live until the attempt ends
  diff ID [--attempt N] [--stat]       what the latest (or Nth) attempt changed against the commit it started from:
                                       the patch on stdout (coloured on a terminal), --stat the files and their +/- counts
  compare ID --a N --b N [--include-receipt]
  race ID (--variant V --variant V... | --from-profile NAME) [--check CMD] [--wait]
                                       run rival attempts of a backlog or ready job side by side, each on its own branch;
                                       V is harness=H,model=M,reasoning_effort=E,harness_profile=P (a bare word: the harness);
                                       --from-profile: the entries of the manifest's agent profile NAME are the variants;
                                       --check runs in each attempt's workspace after its agent ends (exit 0 passes)
  compare ID                           a race's attempts side by side: variant, check, diff size, cost, time, tokens, summary
  choose ID N                          make the race's attempt N the job's result and delete the others' branches

create, list and attempts act on --project, else the profile's project (svc config set project ID).

Examples:
  svc job create --description "Fix the login bug" --harness harness_b --model claude-sonnet-4-5
  svc job list --phase active
  svc job logs JOB_ID -f                     (a workflow root: its steps' logs, labelled by step)
  svc job diff JOB_ID --attempt 2 > attempt-2.patch
  svc job race JOB_ID --variant harness_a,model=claude-opus-4-1 --variant harness_d --check "npm test" --wait
  svc job cancel JOB_ID --reason "superseded"`;

type Body = Record<string, unknown>;
type Options = Parameters<typeof parseCommand>[1];

function requireProject(ctx: Context): string {
  if (!ctx.project) throw new UsageError("--project is required (or set the profile's project: `svc config set project ID`)", JOB_USAGE);
  return ctx.project;
}

/** A repeatable flag's values (node's parseArgs gives an array with `multiple: true`). */
const many = (value: unknown): string[] | undefined => (value === undefined ? undefined : ([] as string[]).concat(value as string | string[]));
/** `none` clears a nullable field. */
const orNull = (value: string | undefined): string | null | undefined => (value === 'none' ? null : value);
type CreateJob = Schemas['CreateJobRequest'];
type UpdateJob = Schemas['UpdateJob'];

const int = (value: string | undefined, name: string) => intFlag(value, name, JOB_USAGE);

const CREATE_OPTIONS = {
  description: { type: 'string' },
  title: { type: 'string' },
  priority: { type: 'string' },
  'issue-type': { type: 'string' },
  label: { type: 'string', multiple: true },
  parent: { type: 'string' },
  'review-required': { type: 'string' },
  harness: { type: 'string' },
  'defer-until': { type: 'string' },
  'due-at': { type: 'string' },
  phase: { type: 'string' },
  hints: { type: 'string' },
  git: { type: 'string' },
  model: { type: 'string' },
  'harness-profile': { type: 'string' },
  env: { type: 'string' },
  'resource-ref': { type: 'string', multiple: true },
} as const;
const LIST_OPTIONS = {
  phase: { type: 'string' },
  label: { type: 'string' },
  assignee: { type: 'string' },
  'issue-type': { type: 'string' },
  priority: { type: 'string' },
  parent: { type: 'string' },
  'due-before': { type: 'string' },
  limit: { type: 'string' },
  offset: { type: 'string' },
} as const;
const UPDATE_OPTIONS = {
  title: { type: 'string' },
  description: { type: 'string' },
  priority: { type: 'string' },
  phase: { type: 'string' },
  'issue-type': { type: 'string' },
  label: { type: 'string', multiple: true },
  assignee: { type: 'string' },
  unassign: { type: 'boolean' },
  'review-required': { type: 'string' },
  'defer-until': { type: 'string' },
  'due-at': { type: 'string' },
  hints: { type: 'string' },
} as const;

const ATTEMPT_COLUMNS: Column[] = [
  { key: 'attempt_number', header: '#' },
  { key: 'id' },
  { key: 'status' },
  { key: 'started_at', header: 'STARTED' },
  { key: 'ended_at', header: 'ENDED' },
  { key: 'result_summary', header: 'SUMMARY' },
];

export async function runJob(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  /** A job body (or the job inside `{job, ...}`) as key: value; --json prints the body as it came. */
  const showJob = (body: unknown) => {
    if (ctx.json) return printJson(body);
    const b = (body ?? {}) as Body;
    const job = b.job && typeof b.job === 'object' ? (b.job as Body) : b;
    printObject(ctx, job, JOB_FIELDS);
    const pr = pullRequestLine(job.pull_request);
    if (pr) write(`pull_request: ${pr}`);
    // {job, attempt}: the attempt (with its lease token) follows the job.
    if (job !== b) for (const [key, value] of Object.entries(b)) if (key !== 'job') write(`${key}:\n${formatNested(value, '  ')}`);
  };
  const showNested = (body: unknown) => (ctx.json ? printJson(body) : write(formatNested(body)));
  const one = <O extends Options>(options: O = {} as O, max = 1) => parseCommand(rest, options, JOB_USAGE, { min: 1, max });

  switch (command) {
    case 'create': {
      const { values: v } = parseCommand(rest, CREATE_OPTIONS, JOB_USAGE, { min: 0, max: 0 });
      const body = {
        description: requireFlag(v.description, 'description', JOB_USAGE),
        title: v.title,
        priority: int(v.priority, 'priority'),
        issue_type: v['issue-type'] as CreateJob['issue_type'],
        labels: many(v.label),
        parent_id: v.parent,
        review_required: v['review-required'] as CreateJob['review_required'],
        harness: v.harness,
        model: v.model,
        harness_profile: v['harness-profile'],
        env_name: v.env,
        resource_refs: many(v['resource-ref'])?.map((uri) => ({ uri })),
        defer_until: v['defer-until'],
        due_at: v['due-at'],
        phase: v.phase as CreateJob['phase'],
        hints: jsonObjectFlag(v.hints, '--hints', JOB_USAGE),
        git: jsonObjectFlag(v.git, '--git', JOB_USAGE),
      };
      showJob(await api(ctx).POST('/projects/{project_id}/jobs', { params: { project_id: requireProject(ctx) }, body }));
      return 0;
    }
    case 'list': {
      const { values: v } = parseCommand(rest, LIST_OPTIONS, JOB_USAGE, { min: 0, max: 0 });
      const query = {
        phase: v.phase,
        label: v.label,
        assignee: v.assignee,
        issue_type: v['issue-type'],
        priority: int(v.priority, 'priority'),
        parent_id: v.parent,
        due_before: v['due-before'],
        limit: int(v.limit, 'limit'),
        offset: int(v.offset, 'offset'),
      };
      const jobs = await api(ctx).GET('/projects/{project_id}/jobs', { params: { project_id: requireProject(ctx) }, query });
      printList(ctx, jobs, jobColumnsFor(jobs.data ?? []), 'jobs');
      return 0;
    }
    case 'get':
    case 'show': {
      const id = one().positionals[0];
      if (ctx.json) {
        printJson(await api(ctx).GET('/jobs/{job_id}', { params: { job_id: id } }));
        return 0;
      }
      // The context carries the latest attempt, hence what became of its changes.
      const context = (await api(ctx).GET('/jobs/{job_id}/context', { params: { job_id: id } })) as Body;
      const work = workLine(context.latest_attempt);
      printObject(ctx, { ...(context.job as Body), ...(work ? { work } : {}) }, work ? [...JOB_FIELDS, 'work'] : JOB_FIELDS);
      return 0;
    }
    case 'update': {
      const { values: v, positionals } = one(UPDATE_OPTIONS);
      if (v.unassign && v.assignee !== undefined) throw new UsageError('pass --assignee or --unassign, not both', JOB_USAGE);
      const body = {
        title: v.title,
        description: v.description,
        priority: int(v.priority, 'priority'),
        phase: v.phase as UpdateJob['phase'],
        issue_type: v['issue-type'] as UpdateJob['issue_type'],
        labels: many(v.label),
        assignee: v.unassign ? null : v.assignee,
        review_required: v['review-required'] as UpdateJob['review_required'],
        defer_until: orNull(v['defer-until']),
        due_at: orNull(v['due-at']),
        hints: jsonObjectFlag(v.hints, '--hints', JOB_USAGE),
      };
      if (Object.values(body).every((x) => x === undefined)) throw new UsageError('nothing to update: pass at least one field flag', JOB_USAGE);
      showJob(await api(ctx).PATCH('/jobs/{job_id}', { params: { job_id: positionals[0] }, body }));
      return 0;
    }
    case 'cancel': {
      const { values, positionals } = one({ reason: { type: 'string' } });
      showJob(await api(ctx).PATCH('/jobs/{job_id}', { params: { job_id: positionals[0] }, body: { phase: 'cancelled', close_reason: values.reason } }));
      return 0;
    }
    case 'context': {
      const body = await api(ctx).GET('/jobs/{job_id}/context', { params: { job_id: one().positionals[0] } });
      if (ctx.json) printJson(body);
      else write(formatContext(body));
      return 0;
    }
    case 'tree': {
      const body = await api(ctx).GET('/jobs/{job_id}/tree', { params: { job_id: one().positionals[0] } });
      if (ctx.json) printJson(body);
      else write(formatTree(body));
      return 0;
    }
    case 'claim':
      showJob(await api(ctx).POST('/jobs/{job_id}/claim', { params: { job_id: one().positionals[0] }, body: {} }));
      return 0;
    case 'release': {
      const { values, positionals } = one({ attempt: { type: 'string' }, token: { type: 'string' } });
      const body = { attempt_id: requireFlag(values.attempt, 'attempt', JOB_USAGE), lease_token: requireFlag(values.token, 'token', JOB_USAGE) };
      showJob(await api(ctx).POST('/jobs/{job_id}/release', { params: { job_id: positionals[0] }, body: body }));
      return 0;
    }
    case 'submit': {
      const { values, positionals } = one({ summary: { type: 'string' } });
      showJob(
        await api(ctx).POST('/jobs/{job_id}/submit', {
          params: { job_id: positionals[0] },
          body: { summary: requireFlag(values.summary, 'summary', JOB_USAGE) },
        }),
      );
      return 0;
    }
    case 'approve': {
      const { values, positionals } = one({ comment: { type: 'string' } });
      showJob(await api(ctx).POST('/jobs/{job_id}/approve', { params: { job_id: positionals[0] }, body: { comment: values.comment } }));
      return 0;
    }
    case 'reject': {
      const { values, positionals } = one({ reason: { type: 'string' } });
      showJob(
        await api(ctx).POST('/jobs/{job_id}/reject', { params: { job_id: positionals[0] }, body: { reason: requireFlag(values.reason, 'reason', JOB_USAGE) } }),
      );
      return 0;
    }
    case 'pr': {
      const { values, positionals } = one({ title: { type: 'string' }, body: { type: 'string' }, base: { type: 'string' }, draft: { type: 'boolean' } });
      const body = { title: values.title, body: values.body, base: values.base, draft: values.draft === true };
      showJob(await api(ctx).POST('/jobs/{job_id}/pull-request', { params: { job_id: positionals[0] }, body }));
      return 0;
    }
    case 'deps':
      return runDeps(ctx, rest);
    case 'attachments':
      return runAttachments(ctx, rest, JOB_USAGE);
    case 'attempts': {
      const { values, positionals } = one({ limit: { type: 'string' }, offset: { type: 'string' } }, 2);
      const [id, n] = positionals;
      if (n !== undefined) int(n, 'attempt number');
      const project_id = requireProject(ctx);
      if (n !== undefined) {
        showNested(
          await api(ctx).GET('/projects/{project_id}/jobs/{job_id}/attempts/{attempt_number}', {
            params: { project_id, job_id: id, attempt_number: int(n, 'attempt number')! },
          }),
        );
        return 0;
      }
      const query = { limit: int(values.limit, 'limit'), offset: int(values.offset, 'offset') };
      printList(
        ctx,
        await api(ctx).GET('/projects/{project_id}/jobs/{job_id}/attempts', { params: { project_id, job_id: id }, query }),
        ATTEMPT_COLUMNS,
        'attempts',
      );
      return 0;
    }
    case 'receipt': {
      const { values, positionals } = one({ attempt: { type: 'string' } });
      const job_id = positionals[0];
      const receipt =
        values.attempt === undefined
          ? await api(ctx).GET('/jobs/{job_id}/receipt', { params: { job_id } })
          : await api(ctx).GET('/jobs/{job_id}/attempts/{attempt_id}/receipt', { params: { job_id, attempt_id: values.attempt } });
      if (ctx.json) printJson(receipt);
      else write(formatReceipt(receipt));
      return 0;
    }
    case 'logs':
      return runJobLogs(ctx, rest, JOB_USAGE);
    case 'diff':
      return runJobDiff(ctx, rest, JOB_USAGE);
    case 'race':
      return runJobRace(ctx, rest, JOB_USAGE);
    case 'choose':
      return runJobChoose(ctx, rest, JOB_USAGE);
    case 'compare': {
      const { values, positionals } = one({ a: { type: 'string' }, b: { type: 'string' }, 'include-receipt': { type: 'boolean' } });
      if (values.a === undefined && values.b === undefined && !values['include-receipt']) return runRaceCompare(ctx, positionals[0]);
      const query = {
        a: int(requireFlag(values.a, 'a', JOB_USAGE), 'a')!,
        b: int(requireFlag(values.b, 'b', JOB_USAGE), 'b')!,
        include_receipt: values['include-receipt'] ? true : undefined,
      };
      showNested(await api(ctx).GET('/jobs/{job_id}/compare', { params: { job_id: positionals[0] }, query }));
      return 0;
    }
    case undefined:
      throw new UsageError('missing job command', JOB_USAGE);
    default:
      throw new UsageError(`unknown job command "${command}"`, JOB_USAGE);
  }
}

async function runDeps(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'list': {
      const { positionals } = parseCommand(rest, {}, JOB_USAGE, { min: 1, max: 1 });
      const body = await api(ctx).GET('/jobs/{job_id}/dependencies', { params: { job_id: positionals[0] } });
      if (ctx.json) printJson(body);
      else write([...section('dependencies', body.dependencies, relationLine), ...section('dependents', body.dependents, relationLine)].join('\n'));
      return 0;
    }
    case 'add': {
      const { values, positionals } = parseCommand(rest, { on: { type: 'string' }, type: { type: 'string' } }, JOB_USAGE, { min: 1, max: 1 });
      const body = {
        related_job_id: requireFlag(values.on, 'on', JOB_USAGE),
        relation_type: (values.type ?? 'blocked_by') as Schemas['AddJobRelation']['relation_type'],
      };
      const created = await api(ctx).POST('/jobs/{job_id}/dependencies', { params: { job_id: positionals[0] }, body });
      if (ctx.json) printJson(created);
      else write(`Job ${positionals[0]} ${body.relation_type} ${body.related_job_id}.`);
      return 0;
    }
    case 'remove': {
      const { positionals } = parseCommand(rest, {}, JOB_USAGE, { min: 2, max: 2 });
      await api(ctx).DELETE('/jobs/{job_id}/dependencies/{related_job_id}', { params: { job_id: positionals[0], related_job_id: positionals[1] } });
      printDone(ctx, `Removed the relation between ${positionals[0]} and ${positionals[1]}.`);
      return 0;
    }
    case undefined:
      throw new UsageError('missing deps command (list, add, remove)', JOB_USAGE);
    default:
      throw new UsageError(`unknown deps command "${command}"`, JOB_USAGE);
  }
}
