import { chown, mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ProcessSpec } from '../../core/ports/runtime.ts';
import type { HarnessDefinition } from '../../core/ports/harness.ts';
import { isManagedModel, type ManagedModelResolution } from '../../core/ports/inference.ts';
import type { SecretContext } from '../../core/ports/secrets.ts';
import type { Manifest } from '../../domain/manifest/types.ts';
import { secretMasker } from '../../core/secrets/mask.ts';
import { Invalid, NotFound, SecretMissing } from '../../core/errors.ts';
import type { AttemptControl, AttemptLease, AttemptWork } from '../../core/ports/attempts.ts';
import { WorkerFailure } from './failure.ts';
import type { LogSink } from './log-sink.ts';
import { planAttempt, type ProcessPlan } from './plan.ts';
import { JOB_TOKEN_PERMISSIONS, appApiUrls, resolveOverrides, specEnv } from './env.ts';
import { GitWorkspace, remoteUrl, type Checkout, type GitControls, type GitSetup, type Timed } from './git.ts';
import { RunLine } from './run-line.ts';
import { WorkspaceOverlay } from './overlay.ts';
import { openWorkspace, sessionKey, workspaceMode, type Workspace } from './workspaces.ts';
import { STEPS_PATH, writeStepOutputs } from './step-outputs.ts';
import { repoAccess, type AccessSecrets } from './git-access.ts';
import { isRoot, type RunAs } from './run-as.ts';
import { checkoutGit } from './git-exec.ts';
import { INBOX_PATH, writeCoordinationInbox } from './coordination.ts';
import { hydrateResources } from './resources.ts';
import type { WorkerDeps } from './worker-deps.ts';

/** What provisioning leaves behind for the run and its cleanup, each piece set as soon as it exists. */
export interface Held {
  workspace: Workspace | null;
  /** The attempt's copy-on-write working tree, when it has one (mounted by the checkout). */
  overlay: WorkspaceOverlay | null;
  git: Checkout | null;
}

/** What the attempt run lends its provisioning. */
export interface ProvisionHost {
  deps: WorkerDeps;
  signal: AbortSignal;
  /** The user the attempt runs as (attemptUser). */
  user: RunAs | null;
  control: AttemptControl;
  lease: AttemptLease;
  progress(message: string, percentage: number | null): Promise<void>;
  held: Held;
}

/**
 * The process to start, and how its harness's usage reports count: under `model` when they name
 * none; not at all when the model is reached through svc's inference proxy (`proxied`), which
 * records every call on the attempt itself.
 */
export interface Provisioned {
  spec: ProcessSpec;
  /** Host paths the harness said its CLI reads (HarnessInvocation.readPaths). */
  readPaths?: string[];
  plan: ProcessPlan;
  usage: { model: string; proxied: boolean };
}
const NO_USAGE: Provisioned['usage'] = { model: 'unknown', proxied: false };

/** Job tokens outlive the attempt's timeout by this much (they stop anyway when the attempt ends). */
const TOKEN_MARGIN_SECONDS = 600;
const DEFAULT_TOKEN_TTL_SECONDS = 86_400;

export const timeoutOf = (work: AttemptWork): number | null => {
  const t = work.job.hints.timeout_seconds;
  return typeof t === 'number' && t > 0 ? t : null;
};

/**
 * An attempt's provisioning (attempt-run.ts): its workspace and checkout, its environment and the
 * process spec of its script or its harness, every missing piece failing here, before anything runs.
 */
export class AttemptProvisioner {
  constructor(private readonly host: ProvisionHost) {}

  /** Workspace, checkout, environment and the process spec; every missing piece fails here, before anything runs. */
  async provision(work: AttemptWork, log: LogSink, credentialsDir: string, timed: Timed): Promise<Provisioned> {
    const { deps } = this.host;
    const { sandbox } = deps.settings;
    if (sandbox.refusal) throw new WorkerFailure(sandbox.refusal);
    if (sandbox.warning) await log.system(sandbox.warning);
    const ctx: SecretContext = { projectId: work.project.id, userId: work.job.created_by };
    const manifest: Manifest | null =
      (
        await deps
          .manifests()
          ?.current(work.project.id)
          .catch(() => null)
      )?.parsed ?? null;
    // A runtime that runs processes in an image finds the harness's binary there, not on this machine.
    const plan = await planAttempt(work, deps.harnesses(), manifest, ctx, { commandsIn: deps.runtime.commandsIn });
    if (plan.kind === 'action') throw new WorkerFailure(`action ${plan.type} runs without a workspace`);
    const masks: string[] = [];
    const remask = () => (log.mask = secretMasker(masks));
    const workspace = await timed('workspace', () =>
      openWorkspace(deps.settings.workspaceRoot, work, this.host.signal, async (holder) => {
        const mode = workspaceMode(work);
        const message = `waiting for the ${mode} workspace${mode === 'session' ? ` '${sessionKey(work)}'` : ''}: job ${holder} is using it`;
        await log.system(message);
        await this.host.progress(message, null);
      }),
    );
    this.host.held.workspace = workspace;
    const { dir } = workspace;
    await log.system(`workspace ${dir}${describeWorkspace(work, workspace)}`);

    const exchange = await this.prepareStore(workspace);
    // Copy-on-write only where a fresh folder is cloned into and the process runs on this machine's files.
    if (deps.settings.copyOnWrite && deps.settings.repoCache && workspace.mode === 'isolated' && !deps.runtime.commandsIn)
      this.host.held.overlay = new WorkspaceOverlay(dir);
    const controls = (work.job.git ?? {}) as GitControls;
    const url = work.project.repo_url;
    if (url) {
      const secrets = this.accessSecrets(ctx, credentialsDir, work.project.id);
      const access = await repoAccess(url, secrets, 'cloning');
      const pushUrl = remoteUrl(controls, url);
      const pushAccess = pushUrl && pushUrl !== url ? await repoAccess(pushUrl, secrets, 'pushing to') : null;
      masks.push(...access.secrets, ...(pushAccess?.secrets ?? []));
      remask();
      const envReleaseSha = work.job.env_name ? await this.envReleaseSha(work.project.id, work.job.env_name, controls) : null;
      const setup: GitSetup = {
        dir,
        mirror: path.join(workspace.store, 'mirror.git'),
        exchange,
        checkoutGit: checkoutGit({ sandboxed: sandbox.on, user: this.host.user, writable: [dir, exchange], readOnly: [workspace.store] }),
        touched: false,
        url,
        cache: deps.settings.repoCache ?? null,
        overlay: this.host.held.overlay,
        owner: this.host.user,
        sparse: sparseOf(work),
        access,
        pushAccess,
        controls,
        jobId: work.job.id,
        runId: work.run?.id ?? null,
        projectBranch: work.project.branch,
        envName: work.job.env_name,
        envReleaseSha,
        author: { name: deps.settings.git.author_name, email: deps.settings.git.author_email },
        signal: this.host.signal,
        log: (line) => log.system(line),
      };
      this.host.held.git = await timed('clone', () => checkoutFor(work, workspace, setup));
    } else if ((controls.push ?? 'never') !== 'never' || controls.commit === 'auto' || controls.commit === 'required') {
      throw new WorkerFailure(`the job's git controls need a repository, but project ${work.project.id} has no repo_url`);
    }

    const resourceIndex = await hydrateResources({
      work,
      dir,
      store: deps.resources(),
      control: this.host.control,
      lease: this.host.lease,
      log: (line) => log.system(line),
    });
    const inbox = await writeCoordinationInbox(deps.coordination(), work, dir);
    if (inbox !== null) await log.system(`coordination inbox ${INBOX_PATH}: ${inbox} message(s)`);
    const overrides = await resolveOverrides(work, deps.secrets(), ctx);
    const timeout = timeoutOf(work);
    const { token } = await deps.tokens.signJobToken({
      jobId: work.job.id,
      attemptId: work.attempt.id,
      projectId: work.project.id,
      orgId: work.project.org_id,
      permissions: [...JOB_TOKEN_PERMISSIONS],
      ttlSeconds: timeout ? Math.ceil(timeout) + TOKEN_MARGIN_SECONDS : DEFAULT_TOKEN_TTL_SECONDS,
    });
    masks.push(...overrides.secrets, token);
    const outputs = await writeStepOutputs(dir, work);
    if (outputs.steps.length)
      await log.system(`outputs of step${outputs.steps.length === 1 ? '' : 's'} ${outputs.steps.join(', ')} in ${STEPS_PATH.join('/')}/`);
    // svc's own variables: nothing the job or the harness sets replaces them.
    const svcEnv = {
      ...outputs.env,
      ...specEnv(work, { agentId: plan.agentId, resourceIndex, jobToken: token, apiUrl: deps.apiUrl(), appApis: appApiUrls(work, manifest) }),
    };
    const env = { ...overrides.env, ...svcEnv };
    if (plan.kind === 'script') {
      remask();
      return { plan, spec: { command: '/bin/sh', args: ['-c', plan.run], env, cwd: dir, resourceClass: resourceClassOf(work) }, usage: NO_USAGE };
    }
    if (plan.fallback) await log.system(plan.fallback);
    const { choice } = plan;
    const managed = isManagedModel(choice.model) ? await this.managedModel(work, plan.harness, choice.model!, token) : null;
    // On a managed model the CLI's own credentials are never looked up (nor an OAuth login refreshed).
    const credentials = managed ? {} : await deps.harnesses()!.credentials(plan.harness.id, ctx);
    masks.push(...Object.values(credentials));
    remask();
    if (managed) {
      masks.push(...managed.secrets);
      remask();
      await log.system(`model ${choice.model}: ${managed.model} through ${managed.via === 'proxy' ? "svc's inference proxy" : managed.baseUrl}`);
    }
    const invocation = plan.harness.build({
      prompt: plan.prompt,
      workspace: dir,
      model: managed?.model ?? choice.model,
      reasoningEffort: choice.reasoningEffort,
      variant: choice.variant,
      permissionPolicy: plan.permissionPolicy,
      // On a managed model the gateway is the CLI's only provider: no credential of another (a
      // gateway token, a base URL, cloud keys) may reroute or re-authenticate its calls.
      env: managed ? { ...withoutCredentials(env, plan.harness), ...managed.env } : { ...credentials, ...env },
      ...(managed ? { gateway: true } : {}),
    });
    if (!choice.model && invocation.model && invocation.model === plan.harness.defaultModel)
      await log.system(
        `model ${invocation.model}: the job names none, and it is ${plan.harness.id}'s default model (harnesses.${plan.harness.id}.default_model)`,
      );
    // What the harness writes for its run (a plugin dir, tool server config) is never committed.
    await this.host.held.git?.exclude(Object.keys(invocation.files));
    return {
      plan,
      readPaths: invocation.readPaths ?? [],
      usage: { model: managed?.model ?? choice.model ?? invocation.model ?? 'unknown', proxied: managed?.via === 'proxy' },
      spec: {
        command: invocation.command,
        args: invocation.args,
        // The harness saw the job's overrides in its input and may have built on them (harness_f merges
        // its permission policy into OPENCODE_CONFIG_CONTENT): what it made of them wins over the raw ones.
        env: { ...(managed ? withoutCredentials(overrides.env, plan.harness) : overrides.env), ...invocation.env, ...svcEnv },
        files: invocation.files,
        cwd: dir,
        resourceClass: resourceClassOf(work),
      },
    };
  }

  /** The workspace's store (workspaces.ts), and in it the exchange folder, which the attempt's user may write. */
  private async prepareStore(workspace: Workspace): Promise<string> {
    const exchange = path.join(workspace.store, 'exchange');
    await mkdir(workspace.store, { recursive: true, mode: 0o755 });
    await rm(exchange, { recursive: true, force: true });
    await mkdir(exchange, { mode: 0o700 });
    const user = this.host.user;
    if (user && isRoot()) await chown(exchange, user.uid, user.gid);
    return exchange;
  }

  /** The job's environment's current release SHA, asked only when the ref policy can use it. */
  private async envReleaseSha(projectId: string, envName: string, controls: GitControls): Promise<string | null> {
    const policy = controls.ref_policy ?? (controls.ref ? 'explicit' : 'auto');
    if (policy !== 'env' && policy !== 'auto') return null;
    return (await this.host.deps.environments()?.releaseSha(projectId, envName)) ?? null;
  }

  private async managedModel(work: AttemptWork, harness: HarnessDefinition, model: string, jobToken: string): Promise<ManagedModelResolution> {
    const models = this.host.deps.managedModels();
    if (!models) throw new WorkerFailure(`model ${model} is a managed model, but this server has no inference plugin to resolve it`);
    const names = (harness.credentials?.env ?? []).flat();
    const all = (pattern: RegExp) => names.length > 0 && names.every((name) => pattern.test(name));
    const speaks = harness.speaks ?? (all(/^(ANTHROPIC|CLAUDE)_/) ? 'anthropic' : all(/^(GEMINI|GOOGLE)_/) ? 'gemini' : 'openai');
    try {
      return await models.resolve({ model, projectId: work.project.id, orgId: work.project.org_id, speaks, jobToken });
    } catch (err) {
      if (err instanceof NotFound || err instanceof Invalid) throw new WorkerFailure(err.message);
      throw err;
    }
  }

  private accessSecrets(ctx: SecretContext, credentialsDir: string, projectId: string): AccessSecrets {
    const { settings } = this.host.deps;
    return {
      tokenSecret: settings.git.token_secret,
      sshKeySecret: settings.git.ssh_key_secret,
      credentialsDir,
      repoUrls: settings.repoUrls,
      ...(settings.addresses ? { addresses: settings.addresses } : {}),
      scopeHint: `--project ${projectId}`,
      lookup: async (name) => {
        const resolver = this.host.deps.secrets();
        if (!resolver) return null;
        try {
          return await resolver.resolve(name, ctx);
        } catch (err) {
          if (err instanceof SecretMissing && err.secret === name) return null;
          throw err;
        }
      },
    };
  }
}

/** workspace.sparse as the job asked (validated at creation), or null. */
function sparseOf(work: AttemptWork): string[] | null {
  const sparse = work.job.workspace?.sparse;
  return Array.isArray(sparse) && sparse.length ? sparse.filter((p): p is string => typeof p === 'string') : null;
}

function resourceClassOf(work: AttemptWork): string | undefined {
  const rc = work.job.hints.resource_class;
  return typeof rc === 'string' ? rc : undefined;
}

/** ` (mode job, reused)`-style detail for the workspace log line; nothing for a fresh isolated one. */
function describeWorkspace(work: AttemptWork, workspace: Workspace): string {
  if (workspace.mode === 'isolated') return '';
  const what = workspace.mode === 'session' ? `session '${sessionKey(work)}'` : 'job';
  const how = workspace.reused
    ? workspace.mode === 'job'
      ? "reused: this job's earlier attempt left it"
      : 'reused: an earlier job of the session left it'
    : 'new';
  return ` (workspace ${what}, ${how})`;
}

/**
 * The checkout: on the run's line of work for a step of a run (unless its workspace is isolated),
 * else per the job's git controls; a reused workspace's checkout is continued, not cloned again.
 */
async function checkoutFor(work: AttemptWork, workspace: Workspace, setup: GitSetup): Promise<Checkout> {
  const present = (p: string) =>
    stat(p).then(
      () => true,
      () => false,
    );
  const hasCheckout = workspace.reused && (await present(path.join(workspace.dir, '.git'))) && (await present(setup.mirror));
  // The earlier job's checkout: git runs there only as the job, in the sandbox.
  setup.touched = hasCheckout;
  // A reused directory without a checkout and its mirror (its attempt stopped before cloning) is cloned into afresh.
  if (workspace.reused && !hasCheckout) {
    for (const entry of await readdir(workspace.dir)) await rm(path.join(workspace.dir, entry), { recursive: true, force: true });
  }
  if (work.run && work.job.workspace?.mode !== 'isolated') {
    const step = typeof work.job.hints.step_name === 'string' ? work.job.hints.step_name : work.job.id;
    const dependsOn = Array.isArray(work.job.hints.depends_on) ? work.job.hints.depends_on.filter((d): d is string => typeof d === 'string') : [];
    const upstream = new Map((work.run.steps ?? []).map((s) => [s.name, s.depends_on]));
    const place = {
      step,
      dependsOn,
      upstream,
      mode: workspace.mode === 'isolated' ? 'run' : workspace.mode,
      reused: hasCheckout,
      continueCheckout: workspace.mode === 'job',
    };
    if (setup.sparse || setup.controls.depth)
      await setup.log(
        "workspace.sparse and git.depth do not apply to a step on the run's line of work (it merges the other steps' branches): checked out in full",
      );
    return RunLine.prepare(setup, place, !hasCheckout);
  }
  const checkout = hasCheckout ? await GitWorkspace.reopen(setup) : await GitWorkspace.prepare(setup);
  const { report } = checkout;
  // A fresh isolated workspace has nothing to say, unless it was cut (sparse, shallow).
  if (workspace.mode === 'isolated' && !report?.sparse && !report?.depth) return checkout;
  checkout.resolved.workspace = {
    mode: workspace.mode,
    reused: hasCheckout,
    started_from: checkout.resolved.resolved_sha,
    run_branch: null,
    step_branch: checkout.resolved.resolved_branch,
    merged: [],
    pushed_to: [],
    changed_files: [],
    ...(report ? { checkout: report } : {}),
  };
  return checkout;
}

/** `env` without any variable the harness reads as a provider credential. */
function withoutCredentials(env: Record<string, string>, harness: HarnessDefinition): Record<string, string> {
  const names = new Set((harness.credentials?.env ?? []).flat());
  return Object.fromEntries(Object.entries(env).filter(([name]) => !names.has(name)));
}
