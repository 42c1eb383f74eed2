import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Config } from '../../core/config/schema.ts';
import { afterCommit } from '../../core/db/after-commit.ts';
import { WorkEngine } from '../../core/work/engine.ts';
import type { WorkContext, WorkQueue } from '../../core/work/queue.ts';
import { GitAccessError, optionalRepoAccess, projectAccessSecrets, repoUrlPolicy } from '../../core/git-access.ts';
import { outboundGuard } from '../../core/http/address-guard.ts';
import { registryHostRefusal } from '../../core/git-addresses.ts';
import { maskSecrets } from '../../core/secrets/mask.ts';
import type { SecretResolver } from '../../core/ports/secrets.ts';
import type { RoleService } from '../../core/roles.ts';
import { BUILD_LOG_TAIL_LINES, BuildFailure, BuilderRegistryToken, isBuildFailure, type BuilderRegistry, type BuiltImage } from '../../core/ports/builder.ts';
import { ManifestReaderToken, type ManifestReader } from '../../core/ports/manifest.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import type { RegistrySettingValue } from '../../core/ports/registry.ts';
import type { RepoCache } from '../../core/repo-cache.ts';
import { BuildRepository, type BuildRun, type RunEnd } from './repository.ts';
import { BuildLogs, BuildLogSink, publishRunEnd } from './logs.ts';
import { RegistryTargets, SecretLookup } from './targets.ts';
import { servicesToBuild } from './plan.ts';
import { emitBuildEvent } from './events.ts';

/** Runs built at once by one process. */
const MAX_IN_FLIGHT = 2;
/** A building run silent for this many heartbeats lost its runner (a crash): the lease is that long. */
const LOST_AFTER_BEATS = 3;
/** Runs of a build one runner after another lost (their process died): then it fails. */
const MAX_ATTEMPTS = 3;

/** A build run's work item: the run id is its key. */
export type BuildWork = Record<string, never>;

/**
 * The worker's build runner on the work engine (core/work, queue `builds`): a run requested through
 * BuildService is queued in the transaction that records it (a reusable earlier success never gets
 * here: BuildService answers it at once); any worker claims it, has the configured builder build and
 * push the services, and records the artifacts or the classed failure with the output's last lines,
 * behind the lease (a runner that lost it records nothing). A run cancelled meanwhile aborts its
 * builder; a run whose runner died is built again by another, and failed after MAX_ATTEMPTS.
 */
@injectable()
export class BuildRunner implements RoleService {
  readonly name = 'build-runner';
  readonly queue: WorkQueue<BuildWork>;
  private service: RoleService | null = null;
  /** The worker's repository cache (worker.repo_cache), set by the plugin: builders clone from it. */
  repoCache: RepoCache | null = null;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(WorkEngine) private readonly engine: WorkEngine,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(BuildRepository) private readonly builds: BuildRepository,
    @inject(BuildLogs) private readonly logs: BuildLogs,
    @inject(RegistryTargets) private readonly registries: RegistryTargets,
    @inject(BuilderRegistryToken) private readonly builders: BuilderRegistry,
    @inject(ManifestReaderToken) private readonly manifests: ManifestReader,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(SecretLookup) private readonly secrets: () => SecretResolver | null,
  ) {
    this.queue = engine.define<BuildWork>({
      name: 'builds',
      concurrency: MAX_IN_FLIGHT,
      maxAttempts: MAX_ATTEMPTS,
      leaseMs: LOST_AFTER_BEATS * config.builds.heartbeat_seconds * 1000,
      pollMs: config.builds.poll_ms,
      retry: { initialMs: 1_000, factor: 2, maxMs: 60_000 },
      run: (ctx) => this.run(ctx),
      dead: (runId, _work, error, trx) => this.lost(runId, error, trx),
    });
  }

  async start(): Promise<void> {
    this.service = this.queue.service();
    await this.service.start();
  }

  async stop(): Promise<void> {
    await this.service?.stop();
  }

  /** Queues a pending run in `trx` (the transaction that recorded it): any worker's runner claims it once committed. */
  enqueue(runId: string, trx: Db): Promise<unknown> {
    return this.queue.enqueue(runId, {}, trx);
  }

  private async run(ctx: WorkContext<BuildWork>): Promise<void> {
    const started = await this.db.transaction(async (trx) => {
      const found = await this.builds.startBuilding(ctx.key, this.engine.owner, trx);
      if (found?.fresh) await emitBuildEvent(trx, 'system.build.started', (await this.builds.spec(found.run.build_id, trx))!, found.run);
      return found;
    });
    // Cancelled before a runner took it: nothing to build.
    if (started) await this.execute(started.run, ctx);
  }

  /** Every runner that took the run lost it (their process died): it ends failed; it can be run again. */
  private async lost(runId: string, error: string, trx: Db): Promise<void> {
    const run = await this.builds.run(runId, trx);
    if (!run) return;
    const end = {
      status: 'failed',
      error_class: 'resource_error',
      error_message: `the builder process ${run.runner_ref ?? '?'} stopped while building (${error}); run the build again`,
    } as const;
    if (!(await this.builds.end(run.id, end, trx))) return;
    await emitBuildEvent(trx, 'system.build.failed', (await this.builds.spec(run.build_id, trx))!, { ...run, ...end });
    afterCommit(trx, () => publishRunEnd(this.logs.bus, run.id));
  }

  private async execute(run: BuildRun, ctx: WorkContext<BuildWork>): Promise<void> {
    // A run taken over from a runner that died goes on after the lines it wrote.
    const sink = new BuildLogSink(this.logs, run.id, this.config.builds.log_flush_ms, this.logger, ctx.attempt > 1 ? await this.logs.lastSeq(run.id) : 0);
    const tail: string[] = [];
    // Credentials the build holds (repository token, registry password) never reach the logs.
    const masks: string[] = [];
    const log = (raw: string, stream: 'stdout' | 'stderr' | 'system' = 'stdout') => {
      const line = maskSecrets(raw, masks);
      tail.push(line);
      if (tail.length > BUILD_LOG_TAIL_LINES) tail.shift();
      sink.write(line, stream);
    };
    const abort = new AbortController();
    if (ctx.attempt > 1) log(`the runner building this run stopped before it ended: building it again here (attempt ${ctx.attempt})`, 'system');
    // The lease lost (another runner builds it now) or a cancel: the builder stops.
    const stopOnLease = () => abort.abort(ctx.signal.reason);
    ctx.signal.addEventListener('abort', stopOnLease, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort(new Error('timeout'));
    }, this.config.builds.timeout_seconds * 1000);
    const unsubscribe = this.logs.bus.subscribe(run.id, () => {
      void this.builds.run(run.id).then((r) => {
        if (r && r.status === 'cancelled') abort.abort(new Error('cancelled'));
      });
    });

    let end: RunEnd;
    let images: BuiltImage[] = [];
    try {
      const outcome = await this.build(run, log, abort.signal, masks);
      images = outcome.images;
      end = outcome.end;
    } catch (e) {
      const failure =
        timedOut && !(isBuildFailure(e) && e.errorClass !== 'build_error')
          ? new BuildFailure('timeout_error', `the build did not finish within ${this.config.builds.timeout_seconds} s (builds.timeout_seconds)`)
          : isBuildFailure(e)
            ? e
            : new BuildFailure('resource_error', (e as Error).message);
      const message = maskSecrets(failure.message, masks);
      log(`build failed (${failure.errorClass}): ${message}`, 'system');
      end = { status: 'failed', error_class: failure.errorClass, error_message: message, failed_stage: failure.stage, log_tail: [...tail] };
    } finally {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', stopOnLease);
      unsubscribe();
    }
    await sink.flush();
    await this.db.transaction(async (trx) => {
      // A runner that lost its lease writes nothing (LeaseLost rolls this back).
      await ctx.fence(trx);
      // A cancel that won the race leaves the run cancelled, without artifacts.
      if (!(await this.builds.end(run.id, end, trx))) return;
      await this.builds.insertArtifacts(run.build_id, run.id, images, trx);
      const digests = end.status === 'completed' ? Object.fromEntries(images.map((i) => [i.service_name, i.digest])) : null;
      const type = end.status === 'completed' ? 'system.build.completed' : 'system.build.failed';
      await emitBuildEvent(trx, type, (await this.builds.spec(run.build_id, trx))!, { ...run, ...end }, digests);
    });
    publishRunEnd(this.logs.bus, run.id);
  }

  private async build(
    run: BuildRun,
    log: (line: string, stream?: 'stdout' | 'stderr' | 'system') => void,
    signal: AbortSignal,
    masks: string[],
  ): Promise<{ images: BuiltImage[]; end: RunEnd }> {
    const spec = (await this.builds.spec(run.build_id))!;
    const builder = this.builders.get(run.backend);
    if (!builder)
      throw new BuildFailure(
        'resource_error',
        `builder '${run.backend}' is not configured on this server (configured: ${this.builders.names().join(', ') || 'none'})`,
      );
    const availability = await builder.available();
    if (!availability.ok) throw new BuildFailure('resource_error', `builder '${run.backend}' is not available here: ${availability.reason}`);

    const project = await this.projects.byId(spec.project_id);
    if (!project?.repo_url) throw new BuildFailure('clone_error', `project ${spec.project_id} has no repo_url to build from`);
    const manifest = await this.manifests.byHash(spec.project_id, spec.manifest_hash);
    if (!manifest) throw new BuildFailure('resource_error', `manifest ${spec.manifest_hash} is no longer stored`);
    const setting = (spec.registry ?? manifest.parsed.registry ?? 'none') as RegistrySettingValue;
    // The outbound address policy, again before the registry's credentials go anywhere (a manifest synced before it changed).
    if (typeof setting === 'object' && setting !== null && typeof setting.host === 'string') {
      const refusal = await registryHostRefusal(setting.host, outboundGuard(this.config), { acceptUnresolved: true });
      if (refusal !== null) throw new BuildFailure('registry_error', `registry.host ${setting.host} is refused: ${refusal}`);
    }
    let target;
    try {
      const { mode, ctx } = await this.registries.context(spec.project_id, setting);
      target = await mode.target(ctx);
    } catch (e) {
      throw new BuildFailure('auth_error', `registry credentials: ${(e as Error).message}`);
    }
    if (target.push) masks.push(target.push.password, Buffer.from(`${target.push.username}:${target.push.password}`).toString('base64'));
    const services = servicesToBuild(manifest.parsed.services ?? {}, spec, target);
    log(
      `building ${services.map((s) => s.service).join(', ')} at ${spec.git_sha} with ${builder.name}${target.host ? `, pushing to ${target.host}` : ''}`,
      'system',
    );
    const credentialsDir = mkdtempSync(path.join(tmpdir(), 'svc-build-credentials-'));
    let images: BuiltImage[];
    try {
      const access = await this.repoAccess(project, project.repo_url, credentialsDir, log);
      masks.push(...access.secrets);
      images = await builder.build({
        runId: run.id,
        repoUrl: project.repo_url,
        access,
        repoCache: this.repoCache,
        gitSha: spec.git_sha,
        services,
        platforms: Array.isArray(spec.inputs.platforms) ? (spec.inputs.platforms as string[]) : [],
        push: target.push,
        signal,
        log,
      });
    } finally {
      rmSync(credentialsDir, { recursive: true, force: true });
    }
    if (images.length === 0) {
      throw new BuildFailure(
        'build_error',
        `the builder produced no image for ${services.map((s) => s.service).join(', ')}: check each service's build.context and build.dockerfile, and the output above`,
      );
    }
    return { images, end: { status: 'completed' } };
  }

  /**
   * The project's credentials for its repository, as the worker's checkout uses them
   * (worker.git.token_secret for HTTPS, worker.git.ssh_key_secret for SSH). Without the secret
   * the clone is tried without credentials (a public repository needs none) and says so.
   */
  private async repoAccess(project: { id: string; org_id: string }, repoUrl: string, credentialsDir: string, log: (line: string, stream?: 'system') => void) {
    const secrets = projectAccessSecrets({
      names: this.config.worker.git,
      resolver: this.secrets(),
      projectId: project.id,
      orgId: project.org_id,
      credentialsDir,
      repoUrls: repoUrlPolicy(this.config),
      addresses: outboundGuard(this.config),
    });
    try {
      const { access, note } = await optionalRepoAccess(repoUrl, secrets, 'cloning');
      if (note) log(note, 'system');
      return access;
    } catch (e) {
      if (e instanceof GitAccessError) throw new BuildFailure('clone_error', e.message);
      throw e;
    }
  }
}
