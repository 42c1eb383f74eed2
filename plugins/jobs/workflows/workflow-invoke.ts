import type { InjectionToken } from 'tsyringe';
import { inject, injectable } from '../../../core/di.ts';
import type { Db } from '../../../core/db/knex.ts';
import type { Grant } from '../../../core/auth/principal.ts';
import type { Creator, TriggeringEvent } from '../../../core/ports/launchers.ts';
import type { ManifestReader } from '../../../core/ports/manifest.ts';
import { JobRequestChecks } from '../../../core/ports/jobs.ts';
import {
  describeStep,
  runWorkspace,
  stepExecution,
  type ResourceRefPolicy,
  type WorkflowDefinition,
  type WorkflowStep,
} from '../../../domain/manifest/types.ts';
import { ConditionError, parseCondition, evaluateCondition, referencedSteps } from '../../../domain/manifest/conditions.ts';
import { checkEnvOverrides, checkMergedSize } from '../../../domain/manifest/validate-env.ts';
import { Problems } from '../../../domain/manifest/problems.ts';
import { Tokens } from '../../../core/tokens.ts';
import { checkedRequest, JobCreation, requireOverridePermissions, withDefaults, type CreateJobInput } from '../job/create.ts';
import { isObject } from '../../../core/is-object.ts';
import { isFinished } from '../relations/blockers.ts';
import { JobRepository, type JobRow } from '../job/repository.ts';
import { RelationRepository } from '../relations/relations.ts';
import { SKIPPED } from './roots.ts';
import { JobLifecycle } from '../lifecycle/lifecycle.ts';
import { decideStepConditions } from './step-conditions.ts';
import { BadRequest, Invalid, NotFound } from '../../../core/errors.ts';

/**
 * `POST /projects/{project_id}/workflows/{name}/invoke`: lays a workflow out as jobs in one
 * transaction. The root job carries the invocation (`hints.workflow_name`, `hints.request_json`);
 * a multi-step workflow gets one child job per step, wired by `blocked_by` relations from its
 * `depends_on`, and rollup.ts finishes the root when the steps finish. A single-step workflow is
 * just the root, carrying its step. Running steps is the execution issue's work: everything it
 * needs is in `hints.step` (kind, the agent/script/action spec, an `if` not decided yet).
 */

/** The spec's synchronous invoke wait: at most 60 seconds. */
export const MAX_INVOKE_WAIT_SECONDS = 60;
/** How often a waiting invoke reads the root row again. */
export const INVOKE_POLL_MS = 200;
/** Workflow jobs run at most this long unless the workflow or the caller says otherwise. */
export const WORKFLOW_TIMEOUT_SECONDS = 1800;

export interface InvokeBody {
  input?: Record<string, unknown>;
  env_overrides?: Record<string, string>;
  hints?: Record<string, unknown>;
  /** The run's resource refs; each step takes them per its `resource_refs` policy. */
  resource_refs?: Record<string, unknown>[];
  /** The event that triggered the invoke (never from the HTTP body): `if` conditions read its payload. */
  event?: TriggeringEvent;
}

export interface StepJob {
  job_id: string;
  step_name: string;
  depends_on?: string[];
}

export interface Invocation {
  job_id: string;
  project_id: string;
  status: JobRow['phase'];
  step_jobs?: StepJob[];
  result_json?: unknown;
}

/**
 * The resource refs a step takes from the run's: all of them (`inherit`), none, or those a name in
 * the list matches by label, uri, or the uri's last segment (a document's file name, an attachment's
 * name). A name that matches nothing takes nothing.
 */
export function refsFor(policy: ResourceRefPolicy, refs: Record<string, unknown>[]): Record<string, unknown>[] {
  if (policy === 'inherit') return refs;
  if (policy === 'none') return [];
  const names = new Set(policy);
  return refs.filter((ref) => {
    const uri = String(ref.uri ?? '');
    const last =
      uri
        .replace(/@v\d+$/, '')
        .split('/')
        .pop() ?? '';
    return names.has(String(ref.label ?? '')) || names.has(uri) || names.has(last);
  });
}

/** What a step's condition decides at invoke time: run, skip, or wait for earlier steps' results. */
type Decision = 'run' | 'skip' | 'later';

function decide(step: WorkflowStep, inputs: Record<string, unknown>, event: Record<string, unknown> | null): Decision {
  if (step.if === undefined || step.if === null) return 'run';
  try {
    const cond = parseCondition(step.if as string | boolean);
    if (referencedSteps(cond).length > 0) return 'later';
    return evaluateCondition(cond, { inputs, event }) ? 'run' : 'skip';
  } catch (err) {
    if (err instanceof ConditionError) throw new Invalid(`step '${step.name}' has an invalid if condition: ${err.message}`);
    throw err;
  }
}

/** `hints.step`: what the execution issue runs for this step, with an `if` still to decide. */
function stepHint(step: WorkflowStep, decision: Decision): Record<string, unknown> {
  return { ...stepExecution(step), ...(step.if !== undefined && decision === 'later' ? { if: step.if } : {}) };
}

const unique = (values: string[]) => [...new Set(values)];

/** The manifest reader when the manifest plugin is loaded (it registers after jobs, which must not import it). */
export const ManifestReaderLookup = Symbol('ManifestReaderLookup') as InjectionToken<() => ManifestReader | null>;

@injectable()
export class WorkflowInvocation {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(JobLifecycle) private readonly lifecycle: JobLifecycle,
    @inject(RelationRepository) private readonly relations: RelationRepository,
    @inject(JobCreation) private readonly creation: JobCreation,
    @inject(JobRequestChecks) private readonly requestChecks: JobRequestChecks,
    @inject(ManifestReaderLookup) private readonly manifestReader: () => ManifestReader | null,
  ) {}

  private manifests(): ManifestReader {
    const reader = this.manifestReader();
    if (!reader) throw new NotFound('no manifest has been synced for this project');
    return reader;
  }

  async definition(projectId: string, name: string): Promise<WorkflowDefinition> {
    const manifest = await this.manifests().current(projectId);
    if (!manifest) throw new NotFound(`project ${projectId} has no synced manifest`);
    const workflows = manifest.parsed.workflows ?? {};
    if (!Object.hasOwn(workflows, name)) throw new NotFound(`workflow ${name} not found in the project's manifest`);
    return workflows[name];
  }

  /** `grant` is the caller's (checked for env_overrides); null for the platform's own invokes (triggers). */
  async invoke(creator: Creator, projectId: string, grant: Grant | null, name: string, body: InvokeBody): Promise<Invocation> {
    if (body.env_overrides !== undefined && grant) requireOverridePermissions(grant, { description: '', env_overrides: body.env_overrides });
    await this.requestChecks.check(projectId, { hints: body.hints });
    const workflow = await this.definition(projectId, name);
    const inputs = body.input ?? {};
    const steps = workflow.steps ?? [];
    if (steps.length === 0) throw new Invalid(`workflow ${name} has no steps`);
    // An invocation is new work, admitted as a job request is; its steps, laid out below, are not asked again.
    await this.creation.admitInProject(projectId);
    const decisions = new Map(steps.map((s) => [s.name, decide(s, inputs, body.event?.payload ?? null)]));
    const defaults = await this.creation.validDefaults(projectId);
    // The root takes the defaults' git, the steps the workflow's over them (runWorkspace).
    await this.creation.requirePushRemotes(
      projectId,
      [defaults, withDefaults(defaults, { description: '', ...(workflow.git ? { git: workflow.git } : {}) })],
      `workflow ${name}`,
    );
    // Agent steps whose harness no worker can run are refused now, not failed one by one later.
    const agentSteps = steps.flatMap((s) => ('agent' in s && decisions.get(s.name) !== 'skip' ? [s] : []));
    await this.creation.requireRunnable(
      projectId,
      creator,
      agentSteps.map((s) =>
        withDefaults(defaults, {
          description: '',
          hints: { step: { kind: 'agent' } },
          ...(s.agent.harness ? { harness: s.agent.harness } : {}),
          ...(s.agent.harness_profile ? { harness_profile: s.agent.harness_profile } : {}),
        }),
      ),
      (i) => `step '${agentSteps[i].name}' of workflow ${name}`,
    );
    const requestJson = JSON.stringify(inputs);
    const label = `workflow:${name}`;

    const rootHints: Record<string, unknown> = {
      timeout_seconds: WORKFLOW_TIMEOUT_SECONDS,
      ...(isObject(defaults.hints) ? defaults.hints : {}),
      ...(workflow.hints ?? {}),
      ...(workflow.with_apis ? { app_apis: workflow.with_apis } : {}),
      ...(workflow.db_access ? { db_access: workflow.db_access } : {}),
      ...(body.hints ?? {}),
      workflow_name: name,
      request_json: requestJson,
      ...(body.event ? { event_id: body.event.id, event_json: JSON.stringify(body.event.payload) } : {}),
    };
    const single = steps.length === 1;
    const rootInput: CreateJobInput = {
      title: `workflow ${name}`,
      description: describe(name, inputs, workflow),
      labels: [label],
      hints: rootHints,
      ...(body.resource_refs ? { resource_refs: body.resource_refs } : {}),
    };
    const rootJob = single ? this.stepInput(name, workflow, steps[0], decisions.get(steps[0].name)!, body, rootInput) : rootInput;

    return this.db.transaction((trx) => this.layOut(trx, creator, projectId, name, workflow, defaults, rootJob, body, decisions));
  }

  /** The create request of one step: step settings over workflow settings over `base`. */
  private stepInput(
    name: string,
    workflow: WorkflowDefinition,
    step: WorkflowStep,
    decision: Decision,
    body: InvokeBody,
    base: CreateJobInput,
  ): CreateJobInput {
    const problems = new Problems();
    const env = {
      ...checkEnvOverrides(problems, workflow.env_overrides, `workflows.${name}.env_overrides`),
      ...checkEnvOverrides(problems, step.env_overrides, `workflows.${name}.steps.${step.name}.env_overrides`),
      ...checkEnvOverrides(problems, body.env_overrides, 'env_overrides'),
    };
    checkMergedSize(problems, env, 'env_overrides', step.name, name);
    if (problems.list.length > 0) throw new BadRequest(problems.list.map((p) => `${p.path}: ${p.message}`).join('; '));
    const apis = step.with_apis ?? workflow.with_apis;
    const policy = step.resource_refs ?? workflow.resource_refs ?? 'inherit';
    const hints: Record<string, unknown> = {
      ...(base.hints as Record<string, unknown>),
      ...(apis ? { app_apis: apis } : {}),
      workflow_name: name,
      step_name: step.name,
      step: stepHint(step, decision),
      depends_on: step.depends_on,
      resource_refs: policy,
    };
    if ('script' in step && step.script.timeout && !(base.hints as Record<string, unknown>).timeout_seconds) hints.timeout_seconds = step.script.timeout;
    const input: CreateJobInput = { ...base, hints, resource_refs: refsFor(policy, body.resource_refs ?? []), ...runWorkspace(workflow, step) };
    if ('agent' in step) {
      if (step.agent.harness) input.harness = step.agent.harness;
      if (step.agent.harness_profile) input.harness_profile = step.agent.harness_profile;
    }
    if (Object.keys(env).length > 0) input.env_overrides = env;
    return input;
  }

  private async layOut(
    trx: Db,
    creator: Creator,
    projectId: string,
    name: string,
    workflow: WorkflowDefinition,
    defaults: Record<string, unknown>,
    rootJob: CreateJobInput,
    body: InvokeBody,
    decisions: Map<string, Decision>,
  ): Promise<Invocation> {
    const slug = await this.creation.requireLiveProject(projectId, trx);
    const steps = workflow.steps;
    const single = steps.length === 1;
    const closed = { phase: 'cancelled' as const, closed_at: new Date(), close_reason: SKIPPED };

    const rootRow = this.creation.row(creator, projectId, checkedRequest(defaults, rootJob, `workflow ${name}`), 0);
    const rootSkipped = single && decisions.get(steps[0].name) === 'skip';
    let root = await this.jobs.insertRoot(slug, { ...rootRow, ...(rootSkipped ? closed : {}) }, trx);
    this.lifecycle.created([root], trx);
    if (single) return { job_id: root.id, project_id: projectId, status: root.phase };

    const ids = new Map<string, string>();
    const stepJobs: StepJob[] = [];
    const base: CreateJobInput = { description: '', hints: { ...(rootRow.hints ?? {}) } };
    delete (base.hints as Record<string, unknown>).permission_policy;
    for (const step of steps) {
      const decision = decisions.get(step.name)!;
      const input = this.stepInput(name, workflow, step, decision, body, {
        ...base,
        title: step.name,
        description: `Step ${step.name} of workflow ${name} (${describeStep(step)})`,
        labels: [`workflow:${name}`, `step:${step.name}`],
        parent_id: root.id,
      });
      const placement = await this.creation.childPlacement(root.id, projectId, trx);
      const row = this.creation.row(creator, projectId, checkedRequest(defaults, input, `step '${step.name}' of workflow ${name}`), placement.depth);
      const child = await this.jobs.insert({ ...row, id: placement.id, ...(decision === 'skip' ? closed : {}) }, trx);
      this.lifecycle.created([child], trx);
      ids.set(step.name, child.id);
      stepJobs.push({ job_id: child.id, step_name: step.name, ...(step.depends_on.length > 0 ? { depends_on: step.depends_on } : {}) });
    }
    for (const step of steps) {
      for (const dep of unique(step.depends_on)) {
        const blocker = ids.get(dep);
        if (!blocker) throw new Invalid(`step '${step.name}' depends on unknown step '${dep}' in workflow '${name}'`);
        await this.relations.insert({ job_id: ids.get(step.name)!, related_job_id: blocker, relation_type: 'blocked_by' }, trx);
      }
    }
    // Every step skipped: nothing will finish a step, so the root is done now.
    if ([...decisions.values()].every((d) => d === 'skip')) root = await this.lifecycle.change(root.id, { phase: 'done', closed_at: new Date() }, trx);
    else if ([...decisions.values()].includes('skip')) {
      // Steps skipped now finish no transaction later: decide the conditions that waited only for them (their skips may finish the root).
      await decideStepConditions(this.lifecycle, root, null, trx);
      root = (await this.jobs.byId(root.id, trx))!;
    }
    return { job_id: root.id, project_id: projectId, status: root.phase, step_jobs: stepJobs };
  }

  /**
   * Waits up to `seconds` for the root to finish (done or cancelled), reading its row every
   * INVOKE_POLL_MS. Finished: the status and `result_json` (the root's latest attempt, or for a
   * multi-step workflow step name → that step's latest attempt's result_json). Else null.
   */
  async waitFor(invocation: Invocation, seconds: number): Promise<Invocation | null> {
    const deadline = Date.now() + seconds * 1000;
    for (;;) {
      const row = await this.jobs.byId(invocation.job_id);
      if (row && isFinished(row.phase)) {
        const result_json = invocation.step_jobs
          ? Object.fromEntries(await Promise.all(invocation.step_jobs.map(async (s) => [s.step_name, await this.latestResult(s.job_id)])))
          : await this.latestResult(invocation.job_id);
        return { ...invocation, status: row.phase, result_json };
      }
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await new Promise((resolve) => setTimeout(resolve, Math.min(INVOKE_POLL_MS, left)));
    }
  }

  async status(jobId: string): Promise<JobRow['phase']> {
    return (await this.jobs.byId(jobId))!.phase;
  }

  private async latestResult(jobId: string): Promise<unknown> {
    const attempt = await this.db('job_attempts').where({ job_id: jobId }).orderBy('attempt_number', 'desc').first('result_json');
    return attempt?.result_json ?? null;
  }
}

/** The root's description: the input's own description or prompt, else a line naming the workflow. */
function describe(name: string, inputs: Record<string, unknown>, workflow: WorkflowDefinition): string {
  for (const key of ['description', 'prompt']) {
    const v = inputs[key];
    if (typeof v === 'string' && v.trim()) return v;
  }
  const own = (workflow as unknown as Record<string, unknown>).description;
  if (typeof own === 'string' && own.trim()) return own;
  return `Workflow ${name}: ${workflow.steps.map((s) => s.name).join(', ')}`;
}
