import { Conflict, Invalid, NotFound } from '../../core/errors.ts';
import type { Creator } from '../../core/ports/launchers.ts';
import { releaseImages, type ReleaseRef } from '../../core/ports/environments.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';
import type { DeployRow, EnvironmentRow } from './repository.ts';
import { emitDeployEvent } from './events.ts';
import { viaPipeline } from './deploy-run.ts';
import { nothingToDeploy, releaseOf } from './release-of.ts';
import { suspendedMessage, type DeployRequest, type DirectOptions, type EnvironmentDeps, type EnvironmentService } from './service.ts';

/**
 * Deploys of an environment: through its pipeline or direct on the deployer (deploys.ts), rollbacks,
 * and reading them. A deploy is recorded (and `system.deploy.started` emitted) before the deployer
 * runs; the current release changes only when the deployer reports the new one healthy.
 */
export class DeployService {
  constructor(
    private readonly d: EnvironmentDeps,
    private readonly envs: EnvironmentService,
  ) {}

  /** The release a Deploy request names (release-of.ts). */
  releaseOf(projectId: string, request: DeployRequest): Promise<ReleaseRef> {
    return releaseOf(this.d, projectId, request);
  }

  /**
   * The spec's deploy: through the environment's pipeline (with the release in its inputs) unless
   * `direct` or it has none; direct deploys run on the deployer in the background (`wait` to await).
   */
  async deploy(creator: Creator, projectId: string, name: string, request: DeployRequest, opts: DirectOptions = {}): Promise<DeployRow> {
    const env = await this.envs.get(projectId, name);
    if (env.suspended) throw new Conflict(suspendedMessage(env));
    const release = await this.releaseOf(projectId, request);
    if (env.pipeline && !request.direct) return viaPipeline(this.d, creator, env, release, request);
    return this.deployDirect(creator, env, release, { ...opts, rollbackOf: null });
  }

  /**
   * Records the deploy (emitting `system.deploy.started`) with its work item leased to this process,
   * and carries it out here (deploys.ts), in the background unless `wait`; if this process dies
   * meanwhile, another takes it over.
   */
  private async deployDirect(
    creator: Creator,
    env: EnvironmentRow,
    release: ReleaseRef,
    opts: DirectOptions & { rollbackOf: string | null },
  ): Promise<DeployRow> {
    const { project_id: projectId, name } = env;
    if (Object.keys(releaseImages(release)).length === 0) throw new Invalid(nothingToDeploy(env, release), { fields: ['image_digests'] });
    const { deploy, item } = await this.d.db.transaction(async (trx) => {
      const locked = await this.envs.locked(projectId, name, trx);
      if (locked.suspended) throw new Conflict(suspendedMessage(locked));
      const busy = await this.d.repo.runningDeploy(locked.id, trx);
      if (busy) throw new Conflict(`environment ${name} is already being deployed (${busy.id})`);
      const row = await this.d.repo.insertDeploy(
        {
          environment_id: locked.id,
          project_id: projectId,
          status: 'running',
          release,
          previous_release: locked.current_release,
          rollback_of: opts.rollbackOf,
          direct: true,
          pipeline_run_id: null,
          created_by: creator.id,
        },
        trx,
      );
      await emitDeployEvent(trx, 'system.deploy.started', locked, row, creator.id);
      return { deploy: row, item: await this.d.deploys.accept(row, creator.id, trx) };
    });
    const run = this.d.deploys.start(item, opts.echo);
    if (!opts.wait) return deploy;
    await run;
    return (await this.d.repo.deployRow(deploy.id)) ?? deploy;
  }

  /** Back to an earlier release: the one named, else the newest succeeded deploy's release that differs from the current one. */
  async rollback(
    creator: Creator,
    projectId: string,
    name: string,
    to: { release_id?: string; release_tag?: string },
    opts: DirectOptions = {},
  ): Promise<DeployRow> {
    const env = await this.envs.get(projectId, name);
    if (env.suspended) throw new Conflict(suspendedMessage(env));
    const named = to.release_id || to.release_tag;
    const previous = named ? null : await this.d.repo.previousSucceeded(env.id, env.current_release);
    if (!named && !previous) throw new Invalid(`environment ${name} has no earlier release to roll back to`);
    const release = previous ? previous.release : await this.releaseOf(projectId, { inputs: { ...to } });
    return this.deployDirect(creator, env, release, { ...opts, rollbackOf: previous?.id ?? null });
  }

  async deploys(projectId: string, name: string, q: ListQuery): Promise<Page<DeployRow>> {
    return this.d.repo.deploys((await this.envs.get(projectId, name)).id, q);
  }

  async deployById(projectId: string, name: string, id: string): Promise<DeployRow> {
    const deploy = await this.d.repo.deployById((await this.envs.get(projectId, name)).id, id);
    if (!deploy) throw new NotFound(`deploy ${id} not found`);
    return deploy;
  }

  /** Nothing more happens to the deploy: it ended, or went through a pipeline. */
  deployEnded(deploy: DeployRow): boolean {
    return deploy.status !== 'running';
  }

  /** Waits for the deploys running in this process (server stop). */
  drain(): Promise<void> {
    return this.d.deploys.drain();
  }
}
