import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Config } from '../../core/config/schema.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { Conflict, Invalid, NotFound } from '../../core/errors.ts';
import { isUniqueViolation } from '../../core/http/unique.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';
import { ManifestReaderToken, ManifestSyncerToken, type ManifestReader, type ManifestSyncer } from '../../core/ports/manifest.ts';
import type { StoredManifest } from '../../domain/manifest/types.ts';
import { BuildRepository, type BuildRun, type BuildSpec } from './repository.ts';
import { BuildRunner } from './runner.ts';
import { BuildLogBus, publishRunEnd } from './logs.ts';
import { emitBuildEvent } from './events.ts';
import { ACTIVE_STATUSES, type RunStatus } from './schemas.ts';
import { outboundGuard } from '../../core/http/address-guard.ts';
import { registryHostRefusal } from '../../core/git-addresses.ts';

export interface CreateBuildInput {
  git_sha: string;
  manifest_hash: string;
  services: string[] | null;
  inputs: Record<string, unknown>;
  registry: unknown;
  cache: Record<string, unknown>;
  force_rebuild: boolean;
}

export type BuildView = BuildSpec & { status: RunStatus; latest_run: BuildRun | null };

/** Build specs and their runs: the rules of creating, rerunning and cancelling them. */
@injectable()
export class BuildService {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(BuildRepository) private readonly builds: BuildRepository,
    @inject(BuildRunner) private readonly runner: BuildRunner,
    @inject(BuildLogBus) private readonly logBus: BuildLogBus,
    @inject(ManifestReaderToken) private readonly manifests: ManifestReader,
    @inject(ManifestSyncerToken) private readonly syncer: ManifestSyncer,
  ) {}

  /** A spec and its first run, in one transaction, after the manifest and service checks. */
  async create(projectId: string, input: CreateBuildInput, principal: Principal): Promise<BuildView> {
    const host = (input.registry as { host?: unknown } | null)?.host;
    if (typeof host === 'string') {
      const refusal = await registryHostRefusal(host, outboundGuard(this.config), { acceptUnresolved: true });
      if (refusal !== null) throw new Invalid(`registry.host: ${host} is refused: ${refusal}`);
    }
    const manifest = await this.manifestAt(projectId, input.git_sha, principal);
    if (manifest.manifest_hash !== input.manifest_hash) {
      throw new Invalid(`manifest_hash ${input.manifest_hash} does not match the manifest synced for ${input.git_sha} (${manifest.manifest_hash})`, {
        requested_manifest_hash: input.manifest_hash,
        synced_manifest_hash: manifest.manifest_hash,
      });
    }
    const services = input.services ? [...input.services].sort() : null;
    const declared = manifest.parsed.services ?? {};
    const unknown = (services ?? []).filter((s) => !Object.hasOwn(declared, s));
    if (unknown.length > 0) throw new Invalid(`services not in the manifest at ${input.git_sha}: ${unknown.join(', ')}`, { services: unknown });

    return this.db.transaction(async (trx) => {
      const spec = await this.builds.insertSpec(
        {
          project_id: projectId,
          git_sha: input.git_sha,
          manifest_hash: input.manifest_hash,
          services,
          inputs: input.inputs,
          registry: input.registry,
          cache: input.cache,
          created_by: principal.id,
        },
        trx,
      );
      const run = await this.startRun(spec, input.force_rebuild, principal, trx);
      return { ...spec, status: run.status, latest_run: run };
    });
  }

  /** The spec, or 404 when it does not exist in this project (a route's access check found the project). */
  async get(buildId: string): Promise<BuildView> {
    const spec = await this.builds.spec(buildId);
    if (!spec) throw new NotFound(`build ${buildId} not found`);
    const latest = (await this.builds.latestRuns([buildId])).get(buildId) ?? null;
    return { ...spec, status: latest?.status ?? 'pending', latest_run: latest };
  }

  async list(projectId: string, filters: ListQuery & { git_sha?: string }): Promise<Page<BuildView>> {
    const page = await this.builds.listSpecs(projectId, filters);
    const latest = await this.builds.latestRuns(page.data.map((s) => s.id));
    return {
      ...page,
      data: page.data.map((s) => {
        const run = latest.get(s.id) ?? null;
        return { ...s, status: run?.status ?? 'pending', latest_run: run };
      }),
    };
  }

  /** Another run of the spec; 409 while one is still active. */
  async rerun(buildId: string, forceRebuild: boolean, principal: Principal): Promise<BuildRun> {
    const spec = await this.get(buildId);
    try {
      return await this.db.transaction((trx) => this.startRun(spec, forceRebuild, principal, trx));
    } catch (e) {
      if (isUniqueViolation(e, 'build_runs_one_active')) throw new Conflict(`build ${buildId} already has an active run; cancel it first`);
      throw e;
    }
  }

  /** Cancels the active run; a build whose latest run has ended is a 409. */
  async cancel(buildId: string): Promise<BuildView> {
    const view = await this.get(buildId);
    const run = view.latest_run;
    if (!run || !ACTIVE_STATUSES.includes(run.status)) {
      throw new Conflict(`build ${buildId} is not active (its latest run is ${run?.status ?? 'missing'})`, { status: run?.status ?? null });
    }
    const end = { status: 'cancelled', error_message: 'cancelled by request' } as const;
    const ended = await this.db.transaction(async (trx) => {
      if (!(await this.builds.end(run.id, end, trx))) return false;
      await emitBuildEvent(trx, 'system.build.cancelled', view, { ...run, ...end });
      return true;
    });
    if (!ended) throw new Conflict(`build ${buildId} ended before it could be cancelled`);
    // The runner hears it on the log bus and stops the builder.
    publishRunEnd(this.logBus, run.id);
    return this.get(buildId);
  }

  /**
   * A run of the spec: completed at once with the artifacts of an earlier success of the same
   * project, commit, manifest and services (build reuse: unless `force_rebuild` or builds.reuse is
   * off, SVC_BUILD_REUSE=false), else pending for a worker.
   */
  private async startRun(spec: BuildSpec, forceRebuild: boolean, principal: Principal, trx: Db): Promise<BuildRun> {
    const earlier = this.config.builds.reuse && !forceRebuild ? await this.builds.reusable(spec, trx) : null;
    const fields = { build_id: spec.id, backend: this.config.builds.backend, force_rebuild: forceRebuild, created_by: principal.id };
    if (!earlier) {
      const run = await this.builds.insertRun(fields, trx);
      await this.runner.enqueue(run.id, trx);
      return run;
    }
    const line = `reusing the artifacts of run ${earlier} (same commit, manifest and services; force_rebuild or SVC_BUILD_REUSE=false builds anew)`;
    const { run, digests } = await this.builds.insertReusedRun(fields, earlier, line, trx);
    await emitBuildEvent(trx, 'system.build.completed', spec, run, digests);
    return run;
  }

  /** The manifest synced for this commit; synced from the repository at the SHA when nobody did yet. */
  private async manifestAt(projectId: string, gitSha: string, principal: Principal): Promise<StoredManifest> {
    const stored = await this.manifests.atSha(projectId, gitSha);
    if (stored) return stored;
    try {
      return await this.syncer.syncAt(projectId, gitSha, principal);
    } catch (e) {
      const message = (e as Error).message;
      throw new Invalid(`clone_error: no manifest for ${gitSha}: ${message}`, { error_class: 'clone_error' });
    }
  }
}
