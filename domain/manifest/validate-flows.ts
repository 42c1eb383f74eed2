import { type Problems, at, expectObject, index, isObject, isString, isStringList, unknownKeys } from './problems.ts';
import { checkStepGraph, checkStepKind, type StepOwner } from './validate-steps.ts';
import { checkEnvOverrides, checkMergedSize } from './validate-env.ts';
import { checkTrigger } from './triggers.ts';
import { checkRunGit, checkWorkspace } from './validate-workspace.ts';
import { ConditionError, parseCondition, referencedSteps } from './conditions.ts';
import { checkPipelineInputs } from './pipeline-inputs.ts';

const WORKFLOW_KEYS = ['with_apis', 'db_access', 'resource_refs', 'env_overrides', 'steps', 'hints', 'trigger', 'git', 'workspace'] as const;
const WORKFLOW_STEP_KEYS = [
  'name',
  'agent',
  'script',
  'run',
  'action',
  'depends_on',
  'with_apis',
  'resource_refs',
  'env_overrides',
  'if',
  'workspace',
] as const;
const PIPELINE_KEYS = ['trigger', 'inputs', 'steps', 'git', 'workspace'] as const;
const PIPELINE_STEP_KEYS = ['name', 'agent', 'script', 'run', 'action', 'depends_on', 'approval', 'workspace'] as const;

/** What the workflow checks need from elsewhere in the manifest. */
export interface FlowContext {
  /** API names declared under x-svc.api_spec; null when none are declared (then any name passes). */
  apis: Set<string> | null;
}

function checkResourceRefs(problems: Problems, value: unknown, path: string): void {
  if (value === undefined || value === 'inherit' || value === 'none' || isStringList(value)) return;
  problems.add(path, "resource_refs must be 'inherit', 'none' or a list of resource names or labels");
}

function checkApis(problems: Problems, value: unknown, path: string, ctx: FlowContext): void {
  if (value === undefined) return;
  if (!isStringList(value)) {
    problems.add(path, 'with_apis must be a list of API names');
    return;
  }
  value.forEach((api, i) => {
    if (ctx.apis && !ctx.apis.has(api)) problems.add(index(path, i), `Unknown API '${api}' in with_apis; declare it under x-svc.api_spec`);
  });
}

/** The keys workflows and pipelines share: their trigger, and the git and workspace settings of their steps. */
function checkFlowCommon(problems: Problems, def: Record<string, unknown>, path: string): void {
  if (def.trigger !== undefined) checkTrigger(problems, def.trigger, at(path, 'trigger'));
  checkRunGit(problems, def.git, at(path, 'git'));
  checkWorkspace(problems, def.workspace, at(path, 'workspace'));
}

/**
 * A pipeline needs at least one step. A workflow needs the key (a workflow that only points
 * elsewhere, such as a `$ref`, would fail at every invoke) and may list none yet.
 */
function stepsOf(problems: Problems, def: Record<string, unknown>, path: string, owner: StepOwner): unknown[] {
  const where = at(path, 'steps');
  const pipeline = owner.kind === 'pipeline';
  if (def.steps === undefined && !pipeline) {
    problems.add(where, `steps is required: workflow '${owner.name}' must list its steps here${def.$ref !== undefined ? ' ($ref is not supported)' : ''}`);
    return [];
  }
  if (!Array.isArray(def.steps) || (pipeline && def.steps.length === 0)) {
    problems.add(where, pipeline ? 'steps must be a list with at least one step' : 'steps must be a list');
    return [];
  }
  return def.steps;
}

function checkStepCommon(problems: Problems, step: unknown, path: string, owner: StepOwner): step is Record<string, unknown> {
  if (!expectObject(problems, step, path)) return false;
  unknownKeys(problems, step, owner.kind === 'workflow' ? WORKFLOW_STEP_KEYS : PIPELINE_STEP_KEYS, path);
  if (!isString(step.name)) problems.add(at(path, 'name'), 'Step name is required');
  checkStepKind(problems, step, path, owner);
  checkWorkspace(problems, step.workspace, at(path, 'workspace'));
  return true;
}

/** The steps `name` waits for, directly or through theirs (depends_on), among the workflow's steps. */
function waitsFor(steps: unknown[], name: string): Set<string> {
  const deps = new Map<string, string[]>();
  for (const s of steps) if (isObject(s) && isString(s.name) && !deps.has(s.name)) deps.set(s.name, isStringList(s.depends_on) ? s.depends_on : []);
  const seen = new Set<string>();
  const todo = [...(deps.get(name) ?? [])];
  while (todo.length) {
    const next = todo.pop()!;
    if (seen.has(next)) continue;
    seen.add(next);
    todo.push(...(deps.get(next) ?? []));
  }
  return seen;
}

/**
 * A step's `if` parses with the runtime's parser (conditions.ts), and every `steps.<name>` it reads
 * is a step of the workflow that this step waits for (depends_on, directly or not): the condition is
 * decided when those finish, so one over a step it does not wait for would be decided without it.
 */
function checkCondition(problems: Problems, step: Record<string, unknown>, path: string, steps: unknown[], workflow: string): void {
  if (!isString(step.if) && typeof step.if !== 'boolean') {
    problems.add(path, 'if must be an expression string (or true or false)');
    return;
  }
  let read: string[];
  try {
    read = referencedSteps(parseCondition(step.if));
  } catch (err) {
    if (!(err instanceof ConditionError)) throw err;
    problems.add(path, `invalid if condition: ${err.message}`);
    return;
  }
  const known = new Set(steps.filter((s) => isObject(s) && isString(s.name)).map((s) => (s as { name: string }).name));
  const waited = isString(step.name) ? waitsFor(steps, step.name) : new Set<string>();
  for (const ref of read) {
    if (!known.has(ref)) problems.add(path, `if reads steps.${ref}, but workflow '${workflow}' has no step '${ref}'`);
    else if (!waited.has(ref)) problems.add(path, `if reads steps.${ref}, which this step does not wait for: add '${ref}' to its depends_on`);
  }
}

export function checkWorkflows(problems: Problems, workflows: unknown, ctx: FlowContext): void {
  if (workflows === undefined) return;
  if (!expectObject(problems, workflows, 'workflows')) return;
  for (const [name, def] of Object.entries(workflows)) {
    const path = at('workflows', name);
    if (!expectObject(problems, def, path)) continue;
    const owner: StepOwner = { kind: 'workflow', name };
    unknownKeys(problems, def, WORKFLOW_KEYS, path);
    checkApis(problems, def.with_apis, at(path, 'with_apis'), ctx);
    if (def.db_access !== undefined && def.db_access !== 'read_only' && def.db_access !== 'read_write') {
      problems.add(at(path, 'db_access'), "db_access must be 'read_only' or 'read_write'");
    }
    checkResourceRefs(problems, def.resource_refs, at(path, 'resource_refs'));
    if (def.hints !== undefined) expectObject(problems, def.hints, at(path, 'hints'));
    checkFlowCommon(problems, def, path);
    const shared = checkEnvOverrides(problems, def.env_overrides, at(path, 'env_overrides'));
    const steps = stepsOf(problems, def, path, owner);
    steps.forEach((step, i) => {
      const where = index(at(path, 'steps'), i);
      if (!checkStepCommon(problems, step, where, owner)) return;
      checkApis(problems, step.with_apis, at(where, 'with_apis'), ctx);
      checkResourceRefs(problems, step.resource_refs, at(where, 'resource_refs'));
      if (step.if !== undefined) checkCondition(problems, step, at(where, 'if'), steps, name);
      const own = checkEnvOverrides(problems, step.env_overrides, at(where, 'env_overrides'));
      const stepName = isString(step.name) ? step.name : `#${i}`;
      checkMergedSize(problems, { ...shared, ...own }, at(where, 'env_overrides'), stepName, name);
    });
    if (steps.length === 0) checkMergedSize(problems, shared, at(path, 'env_overrides'), '(all)', name);
    checkStepGraph(problems, steps, at(path, 'steps'), owner);
  }
}

export function checkPipelines(problems: Problems, pipelines: unknown): void {
  if (pipelines === undefined) return;
  if (!expectObject(problems, pipelines, 'pipelines')) return;
  for (const [name, def] of Object.entries(pipelines)) {
    const path = at('pipelines', name);
    if (!expectObject(problems, def, path)) continue;
    const owner: StepOwner = { kind: 'pipeline', name };
    unknownKeys(problems, def, PIPELINE_KEYS, path);
    checkFlowCommon(problems, def, path);
    checkPipelineInputs(problems, def.inputs, at(path, 'inputs'));
    const steps = stepsOf(problems, def, path, owner);
    steps.forEach((step, i) => {
      const where = index(at(path, 'steps'), i);
      if (!checkStepCommon(problems, step, where, owner)) return;
      if (step.approval !== undefined && typeof step.approval !== 'boolean') problems.add(at(where, 'approval'), 'approval must be true or false');
    });
    checkStepGraph(problems, steps, at(path, 'steps'), owner);
  }
}
