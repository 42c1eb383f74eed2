import { isManagedModel } from '../../core/ports/inference.ts';
import type { AttemptWork } from '../../core/ports/attempts.ts';
import type { AuthWhere, HarnessDefinition, HarnessRegistry, PermissionPolicy } from '../../core/ports/harness.ts';
import type { SecretContext } from '../../core/ports/secrets.ts';
import type { AgentChoice, AgentRequest } from '../../domain/manifest/profiles.ts';
import type { Manifest } from '../../domain/manifest/types.ts';
import { HarnessMissing, WorkerFailure } from './failure.ts';
import { isObject } from '../../core/is-object.ts';
import { WORKER_ACTIONS, type WorkerAction } from './actions.ts';
import { shellInputs } from './inputs.ts';

/** What an attempt runs: a shell command, or a harness CLI with a prompt. */
export type Plan =
  | { kind: 'script'; run: string; agentId: string }
  | { kind: 'action'; type: WorkerAction; with: Record<string, unknown>; agentId: string }
  | {
      kind: 'agent';
      harness: HarnessDefinition;
      choice: AgentChoice;
      prompt: string;
      permissionPolicy: PermissionPolicy;
      agentId: string;
      fallback: string | null;
    };

/** A plan that runs a process (every kind but a built-in action). */
export type ProcessPlan = Exclude<Plan, { kind: 'action' }>;

const text = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() ? v : undefined);

/** The prompt of an agent job: a pipeline step's own prompt, else the job's description with the workflow's inputs. */
function promptOf(work: AttemptWork, agent: Record<string, unknown>): string {
  const own = text(agent.prompt);
  if (own) return own;
  const base = text(work.job.description) ?? work.job.title;
  const inputs = text(work.job.hints.request_json);
  return inputs && inputs !== '{}' ? `${base}\n\nInputs (JSON):\n${inputs}` : base;
}

/**
 * Decides what the attempt runs from `hints.step` (workflow and pipeline steps, or any job that
 * carries one): `script` runs its command with /bin/sh, each `${inputs.<path>}` in it a quoted
 * reference to the variable SVC_INPUT_<PATH> (inputs.ts); `agent` runs a harness; `action` is a
 * built-in action the worker carries out through a domain's port (actions.ts; `run` is a script).
 * A job without `hints.step` is an agent job: its description is the prompt, and the
 * harness comes from its harness fields, the manifest's profiles, else the server's default harness.
 */
export async function planAttempt(
  work: AttemptWork,
  harnesses: HarnessRegistry | null,
  manifest: Manifest | null,
  ctx: SecretContext,
  where: AuthWhere = {},
): Promise<Plan> {
  const step = isObject(work.job.hints.step) ? work.job.hints.step : null;
  const kind = step?.kind;
  if (step && kind === 'script') {
    const run = isObject(step.script) ? text(step.script.run) : undefined;
    if (!run) throw new WorkerFailure('hints.step.script.run is missing: a script step needs a command');
    return { kind: 'script', run: shellInputs(run), agentId: 'script' };
  }
  if (step && kind === 'action') {
    const type = isObject(step.action) ? String(step.action.type) : 'unknown';
    const inputs = isObject(step.action) && isObject(step.action.with) ? step.action.with : {};
    if (type === 'run') {
      const run = text(inputs.command);
      if (!run) throw new WorkerFailure('action run needs "command" (with.command)');
      return { kind: 'script', run: shellInputs(run), agentId: 'action:run' };
    }
    if ((WORKER_ACTIONS as readonly string[]).includes(type)) return { kind: 'action', type: type as WorkerAction, with: inputs, agentId: `action:${type}` };
    throw new WorkerFailure(`action ${type} is not available yet`);
  }
  if (step && kind !== 'agent') throw new WorkerFailure(`hints.step.kind '${String(kind)}' is not one of script, agent, action`);

  const agent = step && isObject(step.agent) ? step.agent : {};
  if (!harnesses) {
    throw new WorkerFailure('this job runs an agent, but no harness registry is loaded (add the harnesses plugin); only script steps run here');
  }
  let resolved: AgentChoice;
  try {
    resolved = await harnesses.resolve(work.job.harness as AgentRequest, manifest?.['x-svc']?.agents, ctx, where);
  } catch (err) {
    throw new WorkerFailure(`no harness for this job: ${(err as Error).message}`);
  }
  const { choice, fallback } = afterFailures(resolved, work.attempt.failed_before);
  const harness = harnesses.get(choice.harness);
  if (!harness) throw new WorkerFailure(`harness ${choice.harness} is not known to this server`);
  const auth = await harnesses.auth(harness.id, ctx, where);
  // A managed model brings its own endpoint and credential; the CLI itself must still be there.
  const credentialsSupplied = isManagedModel(choice.model) && auth.missing === 'credentials';
  if (!auth.available && !credentialsSupplied)
    throw new HarnessMissing(
      `harness ${harness.id} cannot run on this worker: ${auth.reason}${auth.instructions.length ? ` (${auth.instructions.join(' ')})` : ''}`,
    );
  const policy = (text(work.job.hints.permission_policy) ?? 'yolo') as PermissionPolicy;
  return { kind: 'agent', harness, choice, prompt: promptOf(work, agent), permissionPolicy: policy, agentId: text(agent.name) ?? harness.id, fallback };
}

/**
 * A profile's fallbacks on retry: after N failed attempts in a row the attempt runs entry N+1 (the
 * last entry once they run out). The first attempt, and one after a success, run the first entry.
 */
function afterFailures(resolved: AgentChoice, failures: number): { choice: AgentChoice; fallback: string | null } {
  const { fallbacks, harness: _h, model: _m, reasoningEffort: _r, variant: _v, ...rest } = resolved;
  const entries = [resolved, ...fallbacks];
  const index = Math.min(failures, entries.length - 1);
  if (index === 0) return { choice: resolved, fallback: null };
  const { harness, model, reasoningEffort, variant } = entries[index];
  const choice: AgentChoice = {
    ...rest,
    harness,
    fallbacks: entries.slice(index + 1),
    ...(model ? { model } : {}),
    ...(reasoningEffort ? { reasoningEffort } : {}),
    ...(variant ? { variant } : {}),
  };
  const from = resolved.profile ? `profile '${resolved.profile}'` : resolved.source;
  return {
    choice,
    fallback: `fallback after ${failures} failed attempt${failures === 1 ? '' : 's'}: entry ${index + 1} of ${entries.length} in ${from} (${harness}${model ? `, ${model}` : ''})`,
  };
}
