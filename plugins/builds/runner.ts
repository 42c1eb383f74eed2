import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Config } from '../../core/config/schema.ts';
import { Passes } from '../../core/passes.ts';
import { GitAccessError, optionalRepoAccess, projectAccessSecrets, repoUrlPolicy } from '../../core/git-access.ts';
import { outboundGuard } from '../../core/http/address-guard.ts';
import { registryHostRefusal } from '../../core/git-addresses.ts';
import { maskSecrets } from '../../core/secrets/mask.ts';
import type { SecretResolver } from '../../core/ports/secrets.ts';
import type { RoleService } from '../../core/roles.ts';
import { BUILD_LOG_TAIL_LINES, BuildFailure, BuilderRegistryToken, type BuilderRegistry, type BuiltImage } from '../../core/ports/builder.ts';
import { ManifestReaderToken, type ManifestReader } from '../../core/ports/manifest.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import type { RegistrySettingValue } from '../../core/ports/registry.ts';
import type { RepoCache } from '../../core/repo-cache.ts';
import { BuildRepository, type BuildRun, type RunEnd } from './repository.ts';
import { BuildLogs, BuildLogSink } from './logs.ts';
import { BuildWakeups } from './wakeups.ts';
import { RegistryTargets, SecretLookup } from './targets.ts';
import { servicesToBuild } from './plan.ts';
import { emitBuildEvent } from './events.ts';

/** Runs built at once by one process. */
const MAX_IN_FLIGHT = 2;
/** A building run silent for this many heartbeats lost its runner (a crash). */
const LOST_AFTER_BEATS = 3;

/**
 * The worker's build loop: claims pending runs (SKIP LOCKED, so any number of workers share them),
 * has the configured builder build and push the services (a reusable earlier success never gets
 * here: BuildService answers it when the run is requested), and records the artifacts or the classed failure with the output's last lines. A run
 * cancelled meanwhile aborts its builder; a run whose runner died is failed by the next pass.
 */
@injectable()
export class BuildRunner implements RoleService {
  readonly name = 'build-runner';
  private readonly ref = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;
  /** The worker's repository cache (worker.repo_cache), set by the plugin: builders clone from it. */
  repoCache: RepoCache | null = null;
  private readonly passes = new Passes(
    () => this.pass(),
    (err) => this.logger.error({ err }, 'build pass failed'),
  );

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.DatabaseUrl) private readonly databaseUrl: string,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(BuildRepository) private readonly builds: BuildRepository,
    @inject(BuildLogs) private readonly logs: BuildLogs,
    @inject(BuildWakeups) private readonly wakeups: BuildWakeups,
    @inject(RegistryTargets) private readonly registries: RegistryTargets,
    @inject(BuilderRegistryToken) private readonly builders: BuilderRegistry,
    @inject(ManifestReaderToken) private readonly manifests: ManifestReader,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(SecretLookup) private readonly secrets: () => SecretResolver | null,
  ) {}

  async start(): Promise<void> {
    await this.passes.wakeOn(this.wakeups, this.databaseUrl, this.logger);
    this.passes.every(this.config.builds.poll_ms);
    this.passes.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.passes.stop();
    await Promise.all(this.inFlight);
  }

  private async pass(): Promise<void> {
    await this.failLost();
    while (!this.stopped && this.inFlight.size < MAX_IN_FLIGHT) {
      const run = await this.db.transaction(async (trx) => {
        const claimed = await this.builds.claim(this.ref, trx);
        if (claimed) await emitBuildEvent(trx, 'system.build.started', (await this.builds.spec(claimed.build_id, trx))!, claimed);
        return claimed;
      });
      if (!run) return;
      const work: Promise<void> = this.execute(run)
        .catch((err) => this.logger.error({ err, runId: run.id }, 'build run failed unexpectedly'))
        .finally(() => {
          this.inFlight.delete(work);
          this.passes.wake();
        });
      this.inFlight.add(work);
    }
  }

  /** Runs left `building` by a runner that stopped heartbeating end as failed; they can be run again. */
  private async failLost(): Promise<void> {
    const before = new Date(Date.now() - LOST_AFTER_BEATS * this.config.builds.heartbeat_seconds * 1000);
    for (const run of await this.builds.stale(before)) {
      const end = {
        status: 'failed',
        error_class: 'resource_error',
        error_message: `the builder process ${run.runner_ref ?? '?'} stopped while building (no heartbeat since before ${before.toISOString()}); run the build again`,
      } as const;
      const ended = await this.db.transaction(async (trx) => {
        if (!(await this.builds.end(run.id, end, trx))) return false;
        await emitBuildEvent(trx, 'system.build.failed', (await this.builds.spec(run.build_id, trx))!, { ...run, ...end });
        return true;
      });
      if (ended) this.logs.bus.publish(run.id);
    }
  }

  private async execute(run: BuildRun): Promise<void> {
    const sink = new BuildLogSink(this.logs, run.id, this.config.builds.log_flush_ms, this.logger);
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
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort(new Error('timeout'));
    }, this.config.builds.timeout_seconds * 1000);
    const beat = setInterval(() => {
      void this.builds.heartbeat(run.id).then((building) => {
        if (!building) abort.abort(new Error('cancelled'));
      });
    }, this.config.builds.heartbeat_seconds * 1000);
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
        timedOut && !(e instanceof BuildFailure && e.errorClass !== 'build_error')
          ? new BuildFailure('timeout_error', `the build did not finish within ${this.config.builds.timeout_seconds} s (builds.timeout_seconds)`)
          : e instanceof BuildFailure
            ? e
            : new BuildFailure('resource_error', (e as Error).message);
      const message = maskSecrets(failure.message, masks);
      log(`build failed (${failure.errorClass}): ${message}`, 'system');
      end = { status: 'failed', error_class: failure.errorClass, error_message: message, failed_stage: failure.stage, log_tail: [...tail] };
    } finally {
      clearTimeout(timer);
      clearInterval(beat);
      unsubscribe();
    }
    await sink.flush();
    await this.db.transaction(async (trx) => {
      // A cancel that won the race leaves the run cancelled, without artifacts.
      if (!(await this.builds.end(run.id, end, trx))) return;
      await this.builds.insertArtifacts(run.build_id, run.id, images, trx);
      const digests = end.status === 'completed' ? Object.fromEntries(images.map((i) => [i.service_name, i.digest])) : null;
      const type = end.status === 'completed' ? 'system.build.completed' : 'system.build.failed';
      await emitBuildEvent(trx, type, (await this.builds.spec(run.build_id, trx))!, { ...run, ...end }, digests);
    });
    this.logs.bus.publish(run.id);
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
