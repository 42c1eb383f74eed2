import { chown, mkdir, readdir, rm, stat } from 'node:fs/promises';
import type { AddressGuard } from '../../core/http/address-guard.ts';
import path from 'node:path';
import type { Logger } from 'pino';
import type { MachineTokens } from '../../core/auth/machine-tokens.ts';
import type { ClaimedAttempt } from '../../core/ports/worker.ts';
import type { ProcessSpec, RunningProcess, Runtime } from '../../core/ports/runtime.ts';
import type { HarnessDefinition, HarnessRegistry } from '../../core/ports/harness.ts';
import { isManagedModel, type ManagedModelResolution, type ManagedModels } from '../../core/ports/inference.ts';
import type { ManifestReader } from '../../core/ports/manifest.ts';
import type { CoordinationThreads } from '../../core/ports/threads.ts';
import type { ResourceStore } from '../../core/ports/resources.ts';
import type { SecretContext, SecretResolver } from '../../core/ports/secrets.ts';
import type { Manifest } from '../../domain/manifest/types.ts';
import { secretMasker } from '../../core/secrets/mask.ts';
import { Invalid, NotFound, SecretMissing } from '../../core/errors.ts';
import { isDatabaseUnavailable } from '../../core/db/unavailable.ts';
import { LeaseLost, type AttemptCompletion, type AttemptControl, type AttemptLease, type AttemptWork, type UsageCall } from '../../core/ports/attempts.ts';
import { HarnessMissing, WorkerFailure } from './failure.ts';
import { Aborted } from '../../core/aborted.ts';
import { LogSink } from './log-sink.ts';
import { patientControl } from './patient-control.ts';
import { JsonResultScanner, outcomeOf } from './result.ts';
import { planAttempt, type Plan, type ProcessPlan } from './plan.ts';
import { JOB_TOKEN_PERMISSIONS, appApiUrls, resolveOverrides, specEnv } from './env.ts';
import { runCheck } from './race-check.ts';
import { GitWorkspace, remoteUrl, type Checkout, type GitControls, type GitSetup, type Timed } from './git.ts';
import { DEFAULT_DIFF_LIMITS, type DiffLimits } from './diff.ts';
import { RunLine } from './run-line.ts';
import { WorkspaceOverlay } from './overlay.ts';
import { openWorkspace, sessionKey, workspaceMode, type Workspace } from './workspaces.ts';
import { STEPS_PATH, writeStepOutputs } from './step-outputs.ts';
import { repoAccess, type AccessSecrets } from './git-access.ts';
import type { RepoUrlPolicy } from '../../core/git-access.ts';
import { HarnessOutput } from './harness-output.ts';
import { handOver, isRoot, type RunAs } from './run-as.ts';
import { attemptUser, type AttemptSandbox } from './sandbox-policy.ts';
import { checkoutGit } from './git-exec.ts';
import { commandPaths } from '../../core/sandbox.ts';
import { INBOX_PATH, writeCoordinationInbox } from './coordination.ts';
import { hydrateResources } from './resources.ts';
import { runAction } from './actions.ts';
import type { BuildActions } from '../../core/ports/build-actions.ts';
import type { EnvironmentActions } from '../../core/ports/environments.ts';
import type { VcsHost } from '../../core/ports/vcshost.ts';
import type { ChatApp } from '../../core/ports/chatapp.ts';
import { isObject } from '../../core/is-object.ts';
import { UnsafePath } from '../../core/contained-fs.ts';

export interface WorkerSettings {
  workspaceRoot: string;
  keepWorkspaces: boolean;
  /** Reused workspaces unused this long are removed (sweepWorkspaces). */
  workspaceIdleMs: number;
  repoCache?: GitSetup['cache'];
  /** Isolated attempts' working trees are overlays over the cache's prepared checkouts (decided once at start: overlayUnavailable). */
  copyOnWrite?: boolean;
  heartbeatMs: number;
  leaseSeconds: number;
  logFlushMs: number;
  git: { token_secret: string; ssh_key_secret: string; author_name: string; author_email: string };
  /** worker.run_as_uid: the user attempts run as (the workspace is handed to it); null: see attemptUser. */
  runAs: RunAs | null;
  /** What worker.sandbox came to on this machine. */
  sandbox: AttemptSandbox;
  /** Which file:// repositories may be cloned here (worker.git.allow_file_urls, file_roots). */
  repoUrls: RepoUrlPolicy;
  /** The outbound address policy every clone, fetch and push is checked and pinned by (outbound.*); absent: none. */
  addresses?: AddressGuard;
  /** worker.diff: what is kept of each attempt's diff (docs/diffs.md); absent: the defaults. */
  diff?: DiffLimits;
}

/** What running an attempt needs; optional ports are looked up per attempt (their plugins may load after this one). */
export interface WorkerDeps {
  control: AttemptControl;
  runtime: Runtime;
  tokens: MachineTokens;
  logger: Logger;
  settings: WorkerSettings;
  secrets(): SecretResolver | null;
  harnesses(): HarnessRegistry | null;
  manifests(): ManifestReader | null;
  resources(): ResourceStore | null;
  coordination(): CoordinationThreads | null;
  managedModels(): ManagedModels | null;
  buildActions(): BuildActions | null;
  environments(): EnvironmentActions | null;
  vcshost(): VcsHost | null;
  chatapp(): ChatApp | null;
  apiUrl(): string;
  /** An attempt found its harness missing here: the worker reports what it can run again, now. */
  harnessesChanged?(): void;
}

type Phase = { name: string; started_at: Date; ended_at: Date };

/** Measures steps of the attempt into `phases` (its receipt's phases). */
const timerFor =
  (phases: Phase[]): Timed =>
  async (name, fn) => {
    const started_at = new Date();
    try {
      return await fn();
    } finally {
      phases.push({ name, started_at, ended_at: new Date() });
    }
  };

/**
 * The process to start, and how its harness's usage reports count: under `model` when they name
 * none; not at all when the model is reached through svc's inference proxy (`proxied`), which
 * records every call on the attempt itself.
 */
interface Provisioned {
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
const PROGRESS_INTERVAL_MS = 1000;
/**
 * How long a CLI whose every model call goes through svc's gateway may take to end by itself once
 * the platform has failed its attempt (a budget reached at the gateway): its job token no longer
 * works, so it can call no model, and its last lines (the refusal) reach the log. Then it is killed.
 */
const ENDED_GRACE_MS = 15_000;

const timeoutOf = (work: AttemptWork): number | null => {
  const t = work.job.hints.timeout_seconds;
  return typeof t === 'number' && t > 0 ? t : null;
};

/**
 * One claimed attempt from start to end: a fresh workspace, the checkout per the job's git controls,
 * the spec's environment, the process through the runtime (output to the attempt log, masked, in
 * batches), the result, commit and push, and the completion under the lease. The lease is renewed
 * while it runs; `stop` (job cancelled, lease lost, worker stopping) kills the process tree.
 */
export class AttemptRun {
  private readonly abort = new AbortController();
  private releaseOnStop = false;
  private process: RunningProcess | null = null;
  /** Every model call of the running CLI goes through svc's gateway (a managed model). */
  private proxied = false;
  private beating = false;
  private readonly lease: AttemptLease;
  /** deps.control, its writes retried while the database is unreachable. */
  private readonly control: AttemptControl;

  constructor(
    private readonly deps: WorkerDeps,
    readonly claim: ClaimedAttempt,
  ) {
    this.lease = { jobId: claim.jobId, attemptId: claim.attemptId, leaseToken: claim.leaseToken };
    this.control = patientControl(deps.control, this.abort.signal, deps.logger, claim.jobId);
  }

  /** Stops the attempt: its process tree is killed; with `release` the job is given back (ready again). */
  stop(reason: string, release = false): void {
    if (this.abort.signal.aborted) return;
    this.releaseOnStop = release;
    this.abort.abort(reason);
    void this.endProcess().catch((err) => this.deps.logger.warn({ err, jobId: this.claim.jobId }, 'could not end the attempt process'));
  }

  /**
   * Kills the process tree, at once unless the platform failed the attempt (not a cancel, not the
   * worker stopping) while a CLI that reaches its model only through the gateway runs: that CLI can
   * call no model any more, so it gets ENDED_GRACE_MS to end by itself and say why (the gateway's
   * refusal) before it is killed.
   */
  private async endProcess(): Promise<void> {
    const proc = this.process;
    if (!proc) return;
    if (this.proxied && !this.releaseOnStop) {
      const work = await this.deps.control.load(this.claim.jobId, this.claim.attemptId).catch(() => null);
      if (work?.attempt.status === 'failed') {
        let timer: NodeJS.Timeout | undefined;
        const grace = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ENDED_GRACE_MS)));
        const exited = await Promise.race([proc.exited.then(() => true), grace]);
        clearTimeout(timer);
        if (exited) return;
      }
    }
    await proc.kill();
  }

  async execute(): Promise<void> {
    const { logger, settings } = this.deps;
    const { control } = this;
    const work = await control.load(this.claim.jobId, this.claim.attemptId);
    if (!work || work.attempt.status !== 'running') return;
    const log = new LogSink(control, work.job.id, work.attempt.id, settings.logFlushMs, logger);
    const credentialsDir = path.join(settings.workspaceRoot, '.credentials', work.attempt.id);
    const phases: Phase[] = [];
    const heartbeat = setInterval(() => void this.beat(), settings.heartbeatMs);
    try {
      let completion: AttemptCompletion;
      try {
        completion = await this.run(work, log, credentialsDir, phases);
      } catch (err) {
        if (this.abort.signal.aborted || err instanceof Aborted || err instanceof LeaseLost) return await this.stopped(log, err);
        if (isDatabaseUnavailable(err)) return await this.givenBack(log, err as Error);
        if (err instanceof HarnessMissing) this.deps.harnessesChanged?.();
        const expected = err instanceof WorkerFailure || err instanceof UnsafePath;
        const reason =
          err instanceof UnsafePath
            ? `refused: ${err.message} (svc never writes through a link the checkout put where it writes)`
            : expected
              ? err.message
              : `worker error: ${(err as Error).message}`;
        if (!expected) logger.error({ err, jobId: work.job.id }, 'attempt failed in the worker');
        await log.system(`failed: ${reason}`);
        // The process ran, so there may be work to show, whatever failed after it.
        if (this.process) await this.recordDiff(log, timerFor(phases));
        completion = {
          result: { status: 'failed', reason },
          result_json: { svc: { status: 'failed', reason } },
          error: reason,
          git: this.git?.resolved ?? null,
        };
      }
      await log.flush();
      await control.recordPhases(this.lease, phases);
      await this.runnerEnded(completion);
      const phase = await control.complete(this.lease, completion);
      logger.info({ jobId: work.job.id, attempt: work.attempt.attempt_number, status: completion.result.status, phase }, 'attempt completed');
    } catch (err) {
      if (err instanceof LeaseLost) logger.warn({ jobId: work.job.id, err: err.message }, 'attempt result not recorded: the lease was lost');
      else logger.error({ err, jobId: work.job.id }, 'attempt could not be completed; its lease will expire and be reaped');
    } finally {
      clearInterval(heartbeat);
      await log.flush();
      await rm(credentialsDir, { recursive: true, force: true }).catch(() => undefined);
      const workspace = this.workspace;
      await this.overlay
        ?.unmount(settings.keepWorkspaces)
        .catch((err) => logger.warn({ err, jobId: work.job.id }, 'could not unmount the copy-on-write workspace'));
      if (workspace) {
        await workspace.release().catch((err) => logger.warn({ err, jobId: work.job.id }, 'could not release the workspace'));
        if (!workspace.kept && !settings.keepWorkspaces) {
          await rm(workspace.dir, { recursive: true, force: true }).catch(() => undefined);
          await rm(workspace.store, { recursive: true, force: true }).catch(() => undefined);
        }
      }
    }
  }

  private git: Checkout | null = null;
  private workspace: Workspace | null = null;
  /** The attempt's copy-on-write working tree, when it has one (mounted by the checkout). */
  private overlay: WorkspaceOverlay | null = null;

  /** `runner.completed` with the result, or `runner.failed` with the error and the exit code when there was one. */
  private runnerEnded(completion: AttemptCompletion): Promise<void> {
    if (completion.result.status !== 'failed')
      return this.control.runnerEvent(this.lease, 'runner.completed', { result: completion.result_json ?? { svc: completion.result } });
    const exitCode = completion.result_json?.exit_code;
    return this.control.runnerEvent(this.lease, 'runner.failed', {
      error: completion.error ?? completion.result.reason ?? 'failed',
      exit_code: typeof exitCode === 'number' ? exitCode : null,
    });
  }

  private async run(work: AttemptWork, log: LogSink, credentialsDir: string, phases: Phase[]): Promise<AttemptCompletion> {
    const timed = timerFor(phases);
    if (isObject(work.job.hints.step) && work.job.hints.step.kind === 'action') {
      const plan = await planAttempt(work, null, null, {});
      if (plan.kind === 'action') return timed('execute', () => this.action(work, plan, log));
    }
    const { spec, plan, usage } = await timed('provision', async () => {
      const provisioned = await this.provision(work, log, credentialsDir, timed);
      const { sandbox } = this.deps.settings;
      const user = this.user;
      if (user) {
        const overlay = this.overlay?.mounted ? this.overlay : null;
        if (isRoot()) await handOver(provisioned.spec.cwd, user, { sandboxed: sandbox.on, ...(overlay ? { chown: () => overlay.handOver(user) } : {}) });
        provisioned.spec.user = user;
      }
      if (sandbox.on) provisioned.spec.sandbox = await this.sandboxView(provisioned.spec, provisioned.readPaths ?? []);
      return provisioned;
    });
    const timeout = timeoutOf(work);
    const scanner = new JsonResultScanner();
    const exit = await timed('execute', async () => {
      const proc = await this.deps.runtime.start({ ...spec, ...(timeout ? { timeoutMs: timeout * 1000 } : {}) }).catch((err: NodeJS.ErrnoException) => {
        const what = `could not start ${spec.command} on the ${this.deps.runtime.name} runtime: ${err.message}`;
        // The CLI went away after the plan found it: the harness cannot run here.
        if (plan.kind === 'agent' && err.code === 'ENOENT') throw new HarnessMissing(`harness ${plan.harness.id} cannot run on this worker: ${what}`);
        throw new WorkerFailure(what);
      });
      this.process = proc;
      this.proxied = usage.proxied;
      if (this.abort.signal.aborted) void proc.kill();
      await log.system(`started ${plan.kind === 'script' ? `/bin/sh -c ${JSON.stringify(plan.run)}` : `${plan.harness.id} (${spec.command})`}`);
      await this.control.runnerEvent(this.lease, 'runner.started', {});
      const harness =
        plan.kind === 'agent'
          ? new HarnessOutput(plan.harness, log, scanner, usage.model, {
              // Through the proxy every call is already on the attempt (the proxy records it): the CLI's own report would count it twice.
              usage: (call) => (usage.proxied ? Promise.resolve() : this.usage(call)),
              progress: (message, pct) => this.progress(log.mask(message), pct),
            })
          : null;
      for await (const out of proc.lines()) {
        if (harness) await harness.line(out);
        else {
          if (out.stream === 'stdout') scanner.push(log.mask(out.line));
          await log.add(out.stream, out.line);
        }
      }
      await harness?.end();
      return proc.exited;
    });
    if (this.abort.signal.aborted) throw new Aborted(String(this.abort.signal.reason));
    let completion = outcomeOf(plan.kind, exit, scanner.result(), timeout);
    const how = exit.timedOut ? 'timed out' : exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.exitCode}`;
    await log.system(`process ended (${how}): ${completion.result.status}${completion.result.reason ? `: ${completion.result.reason}` : ''}`);
    const git = this.git;
    if (git) {
      const succeeded = completion.result.status === 'success';
      const failure = await git.finish(succeeded, completion.result.summary ?? work.job.title, timed);
      if (failure) {
        await log.system(`failed: ${failure}`);
        completion = {
          ...completion,
          result: { status: 'failed', reason: failure, ...(completion.result.summary ? { summary: completion.result.summary } : {}) },
          error: failure,
        };
      }
      await this.recordDiff(log, timed);
    }
    if (work.check_command) completion = { ...completion, check: await timed('check', () => runCheck(this.deps.runtime, spec, work.check_command!, log)) };
    return { ...completion, git: this.git?.resolved ?? null };
  }

  private diffTried = false;

  /**
   * Reads what the attempt changed from its checkout (the phase diff) and stores it under the lease,
   * once. A diff that cannot be read or stored is said in the log and the attempt goes on: it is a
   * record of the work, never a reason to fail it.
   */
  private async recordDiff(log: LogSink, timed: Timed): Promise<void> {
    const git = this.git;
    if (!git || this.diffTried) return;
    this.diffTried = true;
    try {
      const diff = await timed('diff', () => git.diff(this.deps.settings.diff ?? DEFAULT_DIFF_LIMITS));
      if (!diff) return;
      await this.control.recordDiff(this.lease, diff);
      const cut = diff.patch_truncated && diff.max_patch_bytes > 0 ? ` (patch kept up to ${diff.max_patch_bytes} of ${diff.patch_bytes} bytes)` : '';
      await log.system(
        `diff against ${diff.base_sha.slice(0, 12)}: ${diff.files_total} file${diff.files_total === 1 ? '' : 's'} changed, +${diff.additions} -${diff.deletions}${diff.uncommitted ? ', uncommitted work included' : ''}${cut}`,
      );
    } catch (err) {
      if (err instanceof Aborted || err instanceof LeaseLost || this.abort.signal.aborted || isDatabaseUnavailable(err)) throw err;
      const message = err instanceof WorkerFailure || err instanceof UnsafePath ? err.message : `worker error: ${(err as Error).message}`;
      if (!(err instanceof WorkerFailure || err instanceof UnsafePath)) this.deps.logger.warn({ err, jobId: this.claim.jobId }, 'the diff was not recorded');
      await log.system(`the diff was not recorded: ${message}`);
    }
  }

  /** The user the attempt runs as (attemptUser). */
  private get user(): RunAs | null {
    return attemptUser(this.deps.settings.runAs, this.deps.settings.sandbox);
  }

  /** What the process sees in the sandbox: its workspace; read-only, the store its checkout borrows from and the command's own files. */
  private async sandboxView(spec: ProcessSpec, readPaths: string[]): Promise<NonNullable<ProcessSpec['sandbox']>> {
    const { sandbox } = this.deps.settings;
    const searchPath = spec.env.PATH ?? process.env.PATH ?? '';
    const commands = await Promise.all([commandPaths(spec.command, searchPath), commandPaths(process.execPath, '')]);
    const readOnly = [this.workspace!.store, ...commands.flat(), ...readPaths.filter((p) => path.isAbsolute(p)), ...sandbox.readOnly];
    return { writable: [spec.cwd], readOnly, network: sandbox.network };
  }

  /** Workspace, checkout, environment and the process spec; every missing piece fails here, before anything runs. */
  private async provision(work: AttemptWork, log: LogSink, credentialsDir: string, timed: Timed): Promise<Provisioned> {
    const { deps } = this;
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
      openWorkspace(deps.settings.workspaceRoot, work, this.abort.signal, async (holder) => {
        const mode = workspaceMode(work);
        const message = `waiting for the ${mode} workspace${mode === 'session' ? ` '${sessionKey(work)}'` : ''}: job ${holder} is using it`;
        await log.system(message);
        await this.progress(message, null);
      }),
    );
    this.workspace = workspace;
    const { dir } = workspace;
    await log.system(`workspace ${dir}${describeWorkspace(work, workspace)}`);

    const exchange = await this.prepareStore(workspace);
    // Copy-on-write only where a fresh folder is cloned into and the process runs on this machine's files.
    if (deps.settings.copyOnWrite && deps.settings.repoCache && workspace.mode === 'isolated' && !deps.runtime.commandsIn)
      this.overlay = new WorkspaceOverlay(dir);
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
        checkoutGit: checkoutGit({ sandboxed: sandbox.on, user: this.user, writable: [dir, exchange], readOnly: [workspace.store] }),
        touched: false,
        url,
        cache: deps.settings.repoCache ?? null,
        overlay: this.overlay,
        owner: this.user,
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
        signal: this.abort.signal,
        log: (line) => log.system(line),
      };
      this.git = await timed('clone', () => checkoutFor(work, workspace, setup));
    } else if ((controls.push ?? 'never') !== 'never' || controls.commit === 'auto' || controls.commit === 'required') {
      throw new WorkerFailure(`the job's git controls need a repository, but project ${work.project.id} has no repo_url`);
    }

    const resourceIndex = await hydrateResources({
      work,
      dir,
      store: deps.resources(),
      control: this.control,
      lease: this.lease,
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
    await this.git?.exclude(Object.keys(invocation.files));
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
    const user = this.user;
    if (user && isRoot()) await chown(exchange, user.uid, user.gid);
    return exchange;
  }

  /** The job's environment's current release SHA, asked only when the ref policy can use it. */
  private async envReleaseSha(projectId: string, envName: string, controls: GitControls): Promise<string | null> {
    const policy = controls.ref_policy ?? (controls.ref ? 'explicit' : 'auto');
    if (policy !== 'env' && policy !== 'auto') return null;
    return (await this.deps.environments()?.releaseSha(projectId, envName)) ?? null;
  }

  /** A built-in action: no workspace and no process; its outputs are the attempt's result_json (`steps.<name>.result`). */
  private async action(work: AttemptWork, plan: Extract<Plan, { kind: 'action' }>, log: LogSink): Promise<AttemptCompletion> {
    const { deps } = this;
    await log.system(`action ${plan.type}`);
    await this.control.runnerEvent(this.lease, 'runner.started', {});
    const completion = await runAction(
      work,
      plan.type,
      plan.with,
      {
        buildActions: deps.buildActions,
        environments: deps.environments,
        vcshost: deps.vcshost,
        chatapp: deps.chatapp,
        secrets: deps.secrets,
        tokenSecret: deps.settings.git.token_secret,
        signal: this.abort.signal,
      },
      (line) => log.system(line),
    );
    const { status, summary, reason } = completion.result;
    await log.system(`action ${plan.type}: ${status}${summary || reason ? `: ${summary ?? reason}` : ''}`);
    return completion;
  }

  /**
   * A `managed/<name>` model resolved by the inference domain: svc's model gateway, for the protocol
   * the CLI speaks (the harness's `speaks`, else guessed from its credential names), with the job token as its key.
   */
  private async managedModel(work: AttemptWork, harness: HarnessDefinition, model: string, jobToken: string): Promise<ManagedModelResolution> {
    const models = this.deps.managedModels();
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
    const { settings } = this.deps;
    return {
      tokenSecret: settings.git.token_secret,
      sshKeySecret: settings.git.ssh_key_secret,
      credentialsDir,
      repoUrls: settings.repoUrls,
      ...(settings.addresses ? { addresses: settings.addresses } : {}),
      scopeHint: `--project ${projectId}`,
      lookup: async (name) => {
        const resolver = this.deps.secrets();
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

  /** Records usage; over the job's budget the platform has ended the attempt (BUDGET_EXCEEDED), so the process tree is killed. */
  private async usage(call: UsageCall): Promise<void> {
    const { budgetExceeded } = await this.control.recordUsage(this.lease, [call]);
    if (!budgetExceeded) return;
    await this.control.runnerEvent(this.lease, 'runner.failed', { error: budgetExceeded, exit_code: null });
    this.stop(budgetExceeded);
  }

  private lastProgress: { message: string; percentage: number | null; at: number } | null = null;

  /**
   * `runner.progress`: every change of the percentage, and a new message with the same percentage
   * at most once a second, so an agent rewriting its plan in a loop does not flood the event spine.
   */
  private async progress(message: string, percentage: number | null): Promise<void> {
    const last = this.lastProgress;
    const now = Date.now();
    if (last && last.percentage === percentage && (last.message === message || now - last.at < PROGRESS_INTERVAL_MS)) return;
    this.lastProgress = { message, percentage, at: now };
    await this.control.runnerEvent(this.lease, 'runner.progress', { message, percentage });
  }

  /** Stopped from outside: nothing is reported (the attempt has ended, or its lease is gone), unless the worker gives the job back. */
  private async stopped(log: LogSink, err: unknown): Promise<void> {
    const reason = this.abort.signal.aborted ? String(this.abort.signal.reason) : (err as Error).message;
    await log.system(`stopped: ${reason}`);
    await log.flush();
    if (this.releaseOnStop) await this.control.release(this.lease).catch(() => undefined);
  }

  /**
   * The database went away under the attempt (a read while preparing it, a write the patient control
   * does not cover): that is not the job failing, so it spends none of the job's attempts. The job is
   * given back (the release waits for the database like every write of the attempt) and runs again.
   */
  private async givenBack(log: LogSink, err: Error): Promise<void> {
    this.deps.logger.warn({ err: err.message, jobId: this.claim.jobId }, 'the database is unreachable under the attempt; the job is given back');
    await log.system(`stopped: the database is unreachable (${err.message}); the job is given back and runs again`);
    await log.flush();
    await this.control.release(this.lease);
  }

  private async beat(): Promise<void> {
    if (this.beating || this.abort.signal.aborted) return;
    this.beating = true;
    try {
      await this.control.heartbeat(this.lease, this.deps.settings.leaseSeconds);
    } catch (err) {
      if (err instanceof LeaseLost) this.stop(err.message);
      else this.deps.logger.warn({ err, jobId: this.claim.jobId }, 'heartbeat failed; trying again at the next beat');
    } finally {
      this.beating = false;
    }
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
