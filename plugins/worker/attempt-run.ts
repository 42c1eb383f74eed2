import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { ClaimedAttempt } from '../../core/ports/worker.ts';
import type { ProcessSpec, RunningProcess } from '../../core/ports/runtime.ts';
import { isDatabaseUnavailable } from '../../core/db/unavailable.ts';
import { LeaseLost, type AttemptCompletion, type AttemptControl, type AttemptLease, type AttemptWork, type UsageCall } from '../../core/ports/attempts.ts';
import { HarnessMissing, WorkerFailure } from './failure.ts';
import { Aborted } from '../../core/aborted.ts';
import { LogSink } from './log-sink.ts';
import { patientControl } from './patient-control.ts';
import { JsonResultScanner, outcomeOf } from './result.ts';
import { planAttempt, type Plan } from './plan.ts';
import { runCheck } from './race-check.ts';
import type { Timed } from './git.ts';
import { DEFAULT_DIFF_LIMITS } from './diff.ts';
import { HarnessOutput } from './harness-output.ts';
import { handOver, isRoot, type RunAs } from './run-as.ts';
import { attemptUser } from './sandbox-policy.ts';
import { commandPaths } from '../../core/sandbox.ts';
import { runAction } from './actions.ts';
import { AttemptProvisioner, timeoutOf, type Held } from './attempt-provision.ts';
import type { WorkerDeps } from './worker-deps.ts';
import { isObject } from '../../core/is-object.ts';
import { UnsafePath } from '../../core/contained-fs.ts';

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

const PROGRESS_INTERVAL_MS = 1000;
/**
 * How long a CLI whose every model call goes through svc's gateway may take to end by itself once
 * the platform has failed its attempt (a budget reached at the gateway): its job token no longer
 * works, so it can call no model, and its last lines (the refusal) reach the log. Then it is killed.
 */
const ENDED_GRACE_MS = 15_000;

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
          git: this.held.git?.resolved ?? null,
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
      const { workspace } = this.held;
      await this.held.overlay
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

  private readonly held: Held = { workspace: null, overlay: null, git: null };

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
      const { deps, control, lease, held } = this;
      const provisioner = new AttemptProvisioner({
        deps,
        signal: this.abort.signal,
        user: this.user,
        control,
        lease,
        held,
        progress: (m, pct) => this.progress(m, pct),
      });
      const provisioned = await provisioner.provision(work, log, credentialsDir, timed);
      const { sandbox } = this.deps.settings;
      const user = this.user;
      if (user) {
        const overlay = this.held.overlay?.mounted ? this.held.overlay : null;
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
    const git = this.held.git;
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
    return { ...completion, git: this.held.git?.resolved ?? null };
  }

  private diffTried = false;

  /**
   * Reads what the attempt changed from its checkout (the phase diff) and stores it under the lease,
   * once. A diff that cannot be read or stored is said in the log and the attempt goes on: it is a
   * record of the work, never a reason to fail it.
   */
  private async recordDiff(log: LogSink, timed: Timed): Promise<void> {
    const git = this.held.git;
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
    const readOnly = [this.held.workspace!.store, ...commands.flat(), ...readPaths.filter((p) => path.isAbsolute(p)), ...sandbox.readOnly];
    return { writable: [spec.cwd], readOnly, network: sandbox.network };
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
