import type { AttemptCompletion, AttemptWork } from '../../core/ports/attempts.ts';
import type { BuildActions } from '../../core/ports/build-actions.ts';
import type { ActionOutputs, EnvironmentActions } from '../../core/ports/environments.ts';
import type { VcsHost } from '../../core/ports/vcshost.ts';
import type { ChatApp } from '../../core/ports/chatapp.ts';
import type { SecretResolver } from '../../core/ports/secrets.ts';
import { DomainError, SecretMissing } from '../../core/errors.ts';
import { HostApiError } from '../../core/ports/integrations.ts';
import { isObject } from '../../core/is-object.ts';
import { repoPath } from '../../core/git-addresses.ts';
import { WorkerFailure } from './failure.ts';
import { fillInputs, inputsOf, withInputVariables } from './inputs.ts';

/** The built-in actions the worker carries out itself, through the domains' ports (`run` becomes a script step). */
export const WORKER_ACTIONS = ['build', 'release', 'deploy', 'job', 'env-ensure', 'env-delete', 'create-pr', 'notify'] as const;
export type WorkerAction = (typeof WORKER_ACTIONS)[number];

export interface ActionDeps {
  buildActions(): BuildActions | null;
  environments(): EnvironmentActions | null;
  vcshost(): VcsHost | null;
  chatapp(): ChatApp | null;
  secrets(): SecretResolver | null;
  /** The project's code-host token secret (worker.git.token_secret). */
  tokenSecret: string;
  signal: AbortSignal;
}

const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v.trim() : null);

const required = (w: Record<string, unknown>, key: string, action: string): string => {
  const v = w[key];
  if (typeof v !== 'string' || !v.trim()) throw new WorkerFailure(`action ${action} needs "${key}" (with.${key})`);
  return v.trim();
};

/** `owner/name` of the project's repository on its code host. */
function hostRepo(url: string | null): string {
  const repo = repoPath(url);
  if (!repo) throw new WorkerFailure(`create-pr needs the project's repository on a code host, but its repo_url is ${url ?? 'not set'}`);
  return repo;
}

/**
 * Carries out one action step. Its outputs become the attempt's result (`result_json`, what
 * `steps.<name>.result` reads: build_id, digests, release tag, environment, pull request…). A
 * refusal of the domain or of the host is the step's failure, with its message.
 */
export async function runAction(
  work: AttemptWork,
  type: WorkerAction,
  rawWith: Record<string, unknown>,
  deps: ActionDeps,
  log: (line: string) => Promise<void>,
): Promise<AttemptCompletion> {
  const inputs = inputsOf(work);
  // A job's command line is run by a shell in the service's image: its inputs are variables there (inputs.ts).
  const fill = (k: string, v: unknown) => (type === 'job' && k === 'command' && typeof v === 'string' ? withInputVariables(v, inputs) : fillInputs(v, inputs));
  const w = Object.fromEntries(Object.entries(rawWith).map(([k, v]) => [k, fill(k, v)]));
  if (type === 'build' || type === 'release') return buildAction(type, w, work, deps, log);
  const namesRelease = inputs.release_id ?? inputs.release_tag ?? inputs.image_digests;
  const withRelease = namesRelease ? inputs : { ...inputs, ...releaseOfRun(work) };
  if (type === 'job') return jobAction(w, work, withRelease, deps, log);
  const outputs = await domainAction(type, w, work, withRelease, deps, log);
  const summary = `action ${type} done`;
  return { result: { status: 'success', summary }, result_json: { ...outputs, svc: { status: 'success', summary } } };
}

/**
 * The release an earlier step of the same run made (a `release` step's outputs), so a `deploy`
 * after `build → release` needs no ids wired by hand; the run's own inputs win when they name one.
 */
function releaseOfRun(work: AttemptWork): Record<string, unknown> {
  const made = (work.run?.steps ?? []).map((s) => s.attempt?.result_json).filter((r) => isObject(r) && typeof r.release_id === 'string');
  const last = made.at(-1);
  return last ? { release_id: last.release_id, release_tag: last.tag } : {};
}

/** A build or release step, run through the builds domain; a build that ended unsuccessfully fails the step with its class. */
async function buildAction(
  type: 'build' | 'release',
  w: Record<string, unknown>,
  work: AttemptWork,
  deps: ActionDeps,
  log: (line: string) => Promise<void>,
): Promise<AttemptCompletion> {
  const actions = deps.buildActions();
  if (!actions) throw new WorkerFailure(`action ${type} needs the builds plugin, which this server does not load`);
  const ctx = {
    projectId: work.project.id,
    jobId: work.job.id,
    createdBy: work.job.created_by,
    pipelineRunId: text(work.job.hints.pipeline_run_id),
    stepName: text(work.job.hints.step_name),
    signal: deps.signal,
    log: (line: string) => void log(line),
  };
  const ref = text((work.job.git ?? {}).ref);
  try {
    if (type === 'build') {
      const services = Array.isArray(w.services) ? w.services.map(String) : null;
      const out = await actions.build(ctx, { ref, services, forceRebuild: w.force_rebuild === true });
      if (out.status !== 'completed') {
        const reason = `build ${out.build_id} ${out.status}${out.error_class ? ` (${out.error_class})` : ''}: ${out.error_message ?? 'no message'}`;
        return { result: { status: 'failed', reason }, result_json: { svc: { status: 'failed', reason }, ...out }, error: reason };
      }
      const summary = `build ${out.build_id}${out.reused ? ' (reused)' : ''}: ${Object.keys(out.image_digests).join(', ')}`;
      return { result: { status: 'success', summary }, result_json: { svc: { status: 'success', summary }, ...out } };
    }
    const out = await actions.release(ctx, { buildId: text(w.build_id), tag: text(w.tag), version: text(w.version) });
    const summary = `release ${out.tag} of build ${out.build_id}`;
    return { result: { status: 'success', summary }, result_json: { svc: { status: 'success', summary }, ...out } };
  } catch (err) {
    if (deps.signal.aborted) throw err;
    throw new WorkerFailure(`action ${type}: ${(err as Error).message}`);
  }
}

/** `with.command`: a shell line (run by the image's /bin/sh) or an argument list; none: the service's own command. */
function commandOf(v: unknown): string[] | null {
  if (Array.isArray(v) && v.length > 0 && v.every((a) => typeof a === 'string')) return v as string[];
  if (v === undefined || v === null) return null;
  if (typeof v === 'string' && v.trim()) return ['/bin/sh', '-c', v];
  throw new WorkerFailure('action job: "command" (with.command) must be a command line or a list of arguments');
}

/**
 * A `job` step: one service of the environment's release run once through the deployer (the
 * environment is `with.env_name`, else the job's). Its exit code decides the step; its output is the
 * step's log.
 */
async function jobAction(
  w: Record<string, unknown>,
  work: AttemptWork,
  inputs: Record<string, unknown>,
  deps: ActionDeps,
  log: (line: string) => Promise<void>,
): Promise<AttemptCompletion> {
  const envs = deps.environments();
  if (!envs) throw new WorkerFailure('action job needs the environments plugin, which this server does not load');
  const service = required(w, 'service', 'job');
  const envName = text(w.env_name) ?? work.job.env_name;
  if (!envName) throw new WorkerFailure('action job needs an environment: "env_name" (with.env_name), or a run for an environment');
  const ctx = { projectId: work.project.id, jobId: work.job.id, createdBy: work.job.created_by, runId: work.run?.id ?? null, inputs, log, signal: deps.signal };
  let out: ActionOutputs;
  try {
    out = await envs.job(ctx, { envName, service, command: commandOf(w.command) });
  } catch (err) {
    if (deps.signal.aborted) throw err;
    if (err instanceof DomainError) throw new WorkerFailure(`action job: ${err.message}`);
    throw err;
  }
  if (out.exit_code === 0) {
    const summary = `job ${service} in ${envName} exited 0`;
    return { result: { status: 'success', summary }, result_json: { ...out, svc: { status: 'success', summary } } };
  }
  const reason = `job ${service} in ${envName} ${out.timed_out ? 'timed out' : `exited with code ${out.exit_code ?? 'none (killed)'}`}`;
  return { result: { status: 'failed', reason }, result_json: { ...out, svc: { status: 'failed', reason } }, error: reason };
}

/** The environment, code-host and chat actions. */
async function domainAction(
  type: Exclude<WorkerAction, 'build' | 'release' | 'job'>,
  w: Record<string, unknown>,
  work: AttemptWork,
  inputs: Record<string, unknown>,
  deps: ActionDeps,
  log: (line: string) => Promise<void>,
): Promise<ActionOutputs> {
  const ctx = { projectId: work.project.id, jobId: work.job.id, createdBy: work.job.created_by, runId: work.run?.id ?? null, inputs, log };
  const envs = () => {
    const e = deps.environments();
    if (!e) throw new WorkerFailure(`action ${type} needs the environments plugin, which this server does not load`);
    return e;
  };
  try {
    switch (type) {
      case 'deploy':
        return await envs().deploy(ctx, required(w, 'env_name', type));
      case 'env-ensure':
        return await envs().ensure(ctx, required(w, 'env_name', type), typeof w.kind === 'string' ? w.kind : null);
      case 'env-delete':
        return await envs().remove(ctx, required(w, 'env_name', type));
      case 'create-pr': {
        const host = deps.vcshost();
        if (!host) throw new WorkerFailure('create-pr needs a code host adapter (adapters.vcshost)');
        const token = await deps
          .secrets()
          ?.resolve(deps.tokenSecret, { projectId: work.project.id, userId: work.job.created_by })
          .catch((err) => {
            if (err instanceof SecretMissing) return undefined;
            throw err;
          });
        const pr = await host.createPullRequest({
          repo: hostRepo(work.project.repo_url),
          title: required(w, 'title', type),
          body: typeof w.body === 'string' ? w.body : undefined,
          head: required(w, 'branch', type),
          base: typeof w.base === 'string' && w.base ? w.base : work.project.branch,
          ...(token ? { token } : {}),
        });
        await log(`pull request #${pr.number} opened: ${pr.url}`);
        return { number: pr.number, url: pr.url, state: pr.state, head: pr.head, base: pr.base };
      }
      case 'notify': {
        const app = deps.chatapp();
        if (!app) throw new WorkerFailure('notify needs a chat app adapter (adapters.chatapp)');
        const posted = await app.notify({ channel: required(w, 'channel', type), message: required(w, 'message', type) });
        await log(`posted to ${posted.channel} (${posted.ts})`);
        return { channel: posted.channel, ts: posted.ts };
      }
    }
  } catch (err) {
    if (err instanceof DomainError || err instanceof HostApiError || (err as { isBoom?: boolean }).isBoom)
      throw new WorkerFailure(`action ${type}: ${(err as Error).message}`);
    throw err;
  }
}
