import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Db } from '../../core/db/knex.ts';
import { canonicalJson } from '../../domain/manifest/hash.ts';
import { Conflict, DomainError, Forbidden, Invalid, NotFound, QuotaExceeded, UpstreamFailed } from '../../core/errors.ts';
import type { Creator, PipelineLauncher } from '../../core/ports/launchers.ts';
import type { ManifestReader } from '../../core/ports/manifest.ts';
import type { ProjectDirectory } from '../../core/ports/directory.ts';
import type { EnvironmentProtection, StoredManifest } from '../../domain/manifest/types.ts';
import {
  DeployFailed,
  OneOffUnsupported,
  type Deployer,
  type DeployOutcome,
  type OneOffExit,
  type ReleaseRef,
  type RunEnvironment,
  releaseImages,
  releaseName,
} from '../../core/ports/environments.ts';
import type { Releases } from '../../core/ports/releases.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';
import type { EnvironmentRepository, EnvironmentFields, EnvironmentRow, EnvironmentType } from './repository.ts';
import type { DeployTargets } from './targets.ts';
import { emitSuspension } from './events.ts';
import type { DeployLogs } from './deploy-logs.ts';
import { recordHealth } from './deploy-run.ts';
import type { DirectDeploys } from './deploys.ts';
import { releaseOf } from './release-of.ts';

/** The spec's Deploy request. */
export interface DeployRequest {
  git_sha?: string;
  manifest_hash?: string;
  release_tag?: string;
  image_digests?: Record<string, string>;
  image_tag?: string;
  direct?: boolean;
  inputs?: Record<string, unknown>;
}

/** A one-off run of a service (the `job` action): the release the request names, else the environment's current one. */
export interface JobRequest {
  service: string;
  command: string[] | null;
  release: DeployRequest | null;
  log(line: string): Promise<void>;
  signal?: AbortSignal;
}

/** How a direct deploy runs: awaited (`wait`, the deploy action) or in the background; `echo` hears the deployer's log lines. */
export interface DirectOptions {
  wait?: boolean;
  echo?: (line: string) => void;
}

export interface EnsureRequest {
  type?: EnvironmentType;
  kind?: string;
  namespace?: string;
  db_ref?: string;
  pipeline?: string;
  pipeline_inputs?: Record<string, unknown>;
}

export interface EnvironmentDeps {
  db: Db;
  repo: EnvironmentRepository;
  targets: DeployTargets;
  deployer: () => Deployer;
  /** The builds domain's releases; null when the builds plugin is not loaded (no release is found). */
  releases: () => Releases | null;
  manifests: ManifestReader;
  pipelines: () => PipelineLauncher | null;
  logs: DeployLogs;
  logger: Logger;
  /** Direct deploys on the work engine (deploys.ts). */
  deploys: DirectDeploys;
  /** An environment's org and its projects, for limits.org.environments. */
  projects: ProjectDirectory;
  /** limits.org.environments. */
  quota: number;
}

/** An ensure request's fields, or a manifest definition's (only the manifest sets protection). */
const fieldsOf = (def: EnsureRequest & { protection?: EnvironmentProtection }, fallbackType: EnvironmentType): EnvironmentFields => ({
  type: def.type ?? fallbackType,
  namespace: def.namespace ?? null,
  db_ref: def.db_ref ?? null,
  kind: def.kind ?? null,
  pipeline: def.pipeline ?? null,
  pipeline_inputs: def.pipeline_inputs ?? {},
  protection: def.protection ?? null,
});

/** The fields `request` gives that the stored environment holds otherwise. */
function differingFields(env: EnvironmentRow, request: EnsureRequest): (keyof EnsureRequest & keyof EnvironmentRow)[] {
  const fields = ['type', 'kind', 'namespace', 'db_ref', 'pipeline', 'pipeline_inputs'] as const;
  return fields.filter((f) => request[f] !== undefined && canonicalJson(request[f]) !== canonicalJson(env[f]));
}

export const suspendedMessage = (env: EnvironmentRow) => `environment ${env.name} is suspended${env.suspended_reason ? `: ${env.suspended_reason}` : ''}`;

/**
 * Environments: records synced from the manifest or ensured, their suspension and health read from
 * the deployer. Deploys are deploy-service.ts.
 */
export class EnvironmentService {
  constructor(private readonly d: EnvironmentDeps) {}

  /** The manifest sync listener: every manifest environment exists with the manifest's fields. */
  readonly synced = async (manifest: StoredManifest): Promise<void> => {
    const envs = manifest.parsed.environments ?? {};
    await this.d.db.transaction(async (trx) => {
      for (const [name, def] of Object.entries(envs))
        await this.d.repo.upsert(manifest.project_id, name, fieldsOf(def, 'persistent'), 'manifest', manifest.synced_by, trx);
      await this.d.repo.removeStaleFromManifest(manifest.project_id, Object.keys(envs), trx);
    });
  };

  list(projectId: string, q: ListQuery & { kind?: string; type?: EnvironmentType }): Promise<Page<EnvironmentRow>> {
    return this.d.repo.list(projectId, q);
  }

  async get(projectId: string, name: string, db: Db = this.d.db): Promise<EnvironmentRow> {
    const env = await this.d.repo.byName(projectId, name, db);
    if (!env) throw new NotFound(`environment ${name} not found`);
    return env;
  }

  async locked(projectId: string, name: string, trx: Db): Promise<EnvironmentRow> {
    const env = await this.d.repo.lock(projectId, name, trx);
    if (!env) throw new NotFound(`environment ${name} not found`);
    return env;
  }

  /**
   * Creates the environment unless it exists (then returns it unchanged). The manifest's definition
   * of that name comes first; otherwise an ensured environment is temporary.
   */
  /**
   * The environment `name`, created when missing. `strict` is the REST convention: `create` refuses
   * one that exists (409), `match` refuses one whose stored fields differ from those the request
   * gives (409 naming them); without it an existing environment is answered unchanged (the
   * env-ensure action, which re-runs on every pipeline run).
   */
  async ensure(
    creator: Creator,
    projectId: string,
    name: string,
    request: EnsureRequest,
    strict?: 'create' | 'match',
  ): Promise<{ env: EnvironmentRow; created: boolean }> {
    const existing = await this.d.repo.byName(projectId, name);
    if (existing) {
      if (strict === 'create') throw new Conflict(`environment ${name} already exists in project ${projectId} (POST …/environments/ensure answers it)`);
      const differing = strict === 'match' ? differingFields(existing, request) : [];
      if (differing.length)
        throw new Conflict(
          `environment ${name} exists with other ${differing.join(', ')}: ${differing.map((f) => `${f} ${JSON.stringify(existing[f])}`).join(', ')}`,
        );
      return { env: existing, created: false };
    }
    const manifest = await this.d.manifests.current(projectId);
    const def = manifest?.parsed.environments?.[name];
    if (request.pipeline && !Object.hasOwn(manifest?.parsed.pipelines ?? {}, request.pipeline))
      throw new Invalid(`pipeline ${request.pipeline} is not defined in the project's manifest`);
    const fields = def ? fieldsOf(def, 'persistent') : fieldsOf(request, 'temporary');
    const orgId = (await this.d.projects.byId(projectId))?.org_id;
    const { row, created } = await this.d.db.transaction(async (trx) => {
      if (orgId) await this.withinQuota(orgId, projectId, name, trx);
      return this.d.repo.upsert(projectId, name, fields, def ? 'manifest' : 'ensured', creator.id, trx);
    });
    return { env: row, created };
  }

  /**
   * limits.org.environments: a new environment in an org that has that many is 422 naming the quota.
   * Ensures of one org take an advisory lock for the rest of the transaction, so two cannot both take
   * the last place. Environments a manifest declares are not refused (a sync must not half-apply).
   */
  private async withinQuota(orgId: string, projectId: string, name: string, trx: Db): Promise<void> {
    await this.d.repo.lockOrgCreations(orgId, trx);
    if (await this.d.repo.byName(projectId, name, trx)) return;
    const count = await this.d.repo.countInProjects(await this.d.projects.idsInOrg(orgId, trx), trx);
    if (count >= this.d.quota)
      throw new QuotaExceeded('invalid', `quota exceeded: org ${orgId} has ${count} environments (limits.org.environments ${this.d.quota})`);
  }

  /**
   * `fn` on the deployer; its engine or cluster failing (unreachable, refusing) is a 502 naming the
   * deployer and the reason, not a 500: the callers have written nothing yet, so it can be retried.
   */
  private async onDeployer<T>(what: string, env: EnvironmentRow, fn: (deployer: Deployer) => Promise<T>): Promise<T> {
    const deployer = this.d.deployer();
    try {
      return await fn(deployer);
    } catch (err) {
      if (err instanceof DomainError) throw err;
      this.d.logger.warn({ environment: env.id, deployer: deployer.name, err: (err as Error).message }, `deployer failed to ${what}`);
      throw new UpstreamFailed(`deployer ${deployer.name} could not ${what} environment ${env.name}: ${(err as Error).message}`, { deployer: deployer.name });
    }
  }

  /** Removes what the deployer runs and the record. A persistent environment needs environments:admin. */
  async remove(projectId: string, name: string, mayRemovePersistent: boolean): Promise<EnvironmentRow> {
    const env = await this.get(projectId, name);
    if (env.type === 'persistent' && !mayRemovePersistent) throw new Forbidden(`environment ${name} is persistent: deleting it needs environments:admin`);
    const target = await this.d.targets.of(env, env.current_release);
    await this.onDeployer('remove', env, (d) => d.remove(target));
    await this.d.db.transaction(async (trx) => {
      const locked = await this.locked(projectId, name, trx);
      await this.d.repo.delete(locked.id, trx);
    });
    return env;
  }

  /** Marks it suspended and stops its services before that commits: a deployer failure leaves it active (502). */
  async suspend(actorId: string | null, projectId: string, name: string, reason: string | null): Promise<EnvironmentRow> {
    return this.d.db.transaction(async (trx) => {
      const locked = await this.locked(projectId, name, trx);
      if (locked.suspended) throw new Conflict(suspendedMessage(locked));
      const env = await this.markSuspended(locked, reason, actorId, trx);
      const target = await this.d.targets.of(env, env.current_release);
      await this.onDeployer('suspend', env, (d) => d.suspend(target));
      return env;
    });
  }

  private async markSuspended(env: EnvironmentRow, reason: string | null, actorId: string | null, trx: Db): Promise<EnvironmentRow> {
    const updated = await this.d.repo.update(env.id, { suspended: true, suspended_reason: reason, suspended_at: new Date() }, trx);
    await emitSuspension(trx, updated, 'system.environment.suspended', actorId);
    return updated;
  }

  /** Starts its services, then marks it active: a deployer failure leaves it suspended (502). */
  async resume(actorId: string | null, projectId: string, name: string): Promise<EnvironmentRow> {
    const before = await this.get(projectId, name);
    if (!before.suspended) throw new Conflict(`environment ${name} is not suspended`);
    const target = before.current_release ? await this.d.targets.of(before, before.current_release) : null;
    const outcome = target ? await this.onDeployer('resume', before, (d) => d.resume(target)) : null;
    const env = await this.d.db.transaction(async (trx) => {
      const locked = await this.locked(projectId, name, trx);
      if (!locked.suspended) throw new Conflict(`environment ${name} is not suspended`);
      const updated = await this.d.repo.update(locked.id, { suspended: false, suspended_reason: null, suspended_at: null }, trx);
      await emitSuspension(trx, updated, 'system.environment.resumed', actorId);
      return updated;
    });
    return outcome ? this.recordHealth(env, outcome) : env;
  }

  /** The billing seam: every environment of the projects (an org's) suspended with the reason. */
  /** Suspends the projects' active environments in the caller's transaction; their services stop once it commits. */
  async suspendAll(projectIds: string[], reason: string, trx: Db): Promise<number> {
    const active = await this.d.repo.inProjects(projectIds, false, trx);
    const envs = await Promise.all(active.map((env) => this.markSuspended(env, reason, null, trx)));
    const committed = 'executionPromise' in trx ? (trx as Knex.Transaction).executionPromise : Promise.resolve();
    void committed.then(
      () => this.stopAll(envs),
      () => undefined,
    );
    return envs.length;
  }

  private async stopAll(envs: EnvironmentRow[]): Promise<void> {
    for (const env of envs)
      await this.d
        .deployer()
        .suspend(await this.d.targets.of(env, env.current_release))
        .catch((err: Error) => this.d.logger.warn({ environment: env.id, err: err.message }, 'suspended environment: its services could not be stopped'));
  }

  async resumeAll(projectIds: string[]): Promise<number> {
    const suspended = await this.d.db.transaction((trx) => this.d.repo.inProjects(projectIds, true, trx));
    for (const env of suspended) await this.resume(null, env.project_id, env.name);
    return suspended.length;
  }

  /** Health as the deployer reads it now (a suspended environment is not reconciled: its stored health). */
  async health(projectId: string, name: string): Promise<EnvironmentRow> {
    const env = await this.get(projectId, name);
    if (env.suspended || !env.current_release) return env;
    const target = await this.d.targets.of(env, env.current_release);
    return this.recordHealth(env, await this.onDeployer('read the health of', env, (d) => d.health(target)));
  }

  /**
   * Health reconciliation: every environment that runs a release and is not suspended (nor being
   * deployed) has its health read from the deployer and recorded, a change emitting its event. A
   * deployer that cannot answer reads as unknown; one environment's failure does not stop the rest.
   */
  async reconcileHealth(): Promise<number> {
    const envs = await this.d.repo.reconcilable();
    for (const env of envs)
      await this.reconcileOne(env).catch((err: Error) =>
        this.d.logger.error({ err: err.message, environment: env.id }, 'environment health could not be reconciled'),
      );
    return envs.length;
  }

  private async reconcileOne(env: EnvironmentRow): Promise<void> {
    let outcome: DeployOutcome;
    try {
      outcome = await this.d.deployer().health(await this.d.targets.of(env, env.current_release));
    } catch (err) {
      const detail = `health could not be read: ${(err as Error).message}`;
      this.d.logger.warn({ environment: env.id, err: (err as Error).message }, 'environment health: the deployer did not answer');
      outcome = { health: 'unknown', services: [{ service: '*', health: 'unknown', detail }] };
    }
    await this.d.db.transaction(async (trx) => {
      const locked = await this.d.repo.lock(env.project_id, env.name, trx);
      // Suspended, redeployed or being deployed meanwhile: what was read is stale.
      if (!locked || locked.suspended || JSON.stringify(locked.current_release) !== JSON.stringify(env.current_release)) return;
      if (await this.d.repo.runningDeploy(locked.id, trx)) return;
      await this.recordHealth(locked, outcome, trx);
    });
  }

  private recordHealth(env: EnvironmentRow, outcome: DeployOutcome, trx?: Db): Promise<EnvironmentRow> {
    return recordHealth(this.d, env, outcome, trx);
  }

  /**
   * Job creation naming an environment: 409 with the reason when it is suspended; with
   * `git.ref_policy: env`, 422 when it has no current release SHA to check out.
   */
  async checkJobEnvironment(projectId: string, name: string, needsRelease: boolean): Promise<void> {
    const env = await this.d.repo.byName(projectId, name);
    if (env?.suspended) throw new Conflict(suspendedMessage(env));
    if (needsRelease && !env?.current_release?.git_sha)
      throw new Invalid(`git.ref_policy env: environment ${name} has no current release SHA (deploy a release to it first)`, {
        fields: ['git.ref_policy', 'env_name'],
      });
  }

  /** The environment a pipeline run names: its pipeline and inputs; null when it does not exist; 409 while suspended. */
  async forRun(projectId: string, name: string): Promise<RunEnvironment | null> {
    const env = await this.d.repo.byName(projectId, name);
    if (!env) return null;
    if (env.suspended) throw new Conflict(suspendedMessage(env));
    return { pipeline: env.pipeline, pipeline_inputs: env.pipeline_inputs };
  }

  /**
   * Runs a service of the environment once on the deployer, with the environment the service gets:
   * 409 while suspended, 422 without a release holding the service's image or on a deployer that
   * cannot run one-off jobs.
   */
  async runJob(projectId: string, name: string, request: JobRequest): Promise<{ release: ReleaseRef; exit: OneOffExit }> {
    const env = await this.get(projectId, name);
    if (env.suspended) throw new Conflict(suspendedMessage(env));
    const release = request.release ? await releaseOf(this.d, projectId, request.release) : env.current_release;
    if (!release) throw new Invalid(`environment ${name} has no current release: deploy one first, or run the job after a release step`);
    if (!releaseImages(release)[request.service])
      throw new Invalid(`release ${releaseName(release)} has no image of service ${request.service}`, { fields: ['service'] });
    const target = await this.d.targets.of(env, release);
    if (!target.services[request.service]) throw new Invalid(`service ${request.service} is not defined in the manifest`, { fields: ['service'] });
    const deployer = this.d.deployer();
    try {
      if (!deployer.runOnce) throw new OneOffUnsupported(deployer.name);
      const exit = await deployer.runOnce(target, release, { service: request.service, command: request.command, log: request.log, signal: request.signal });
      return { release, exit };
    } catch (err) {
      if (err instanceof OneOffUnsupported || err instanceof DeployFailed) throw new Invalid(err.message);
      throw err;
    }
  }
}
