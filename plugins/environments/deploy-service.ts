import { Conflict, Invalid, NotFound } from '../../core/errors.ts';
import type { Creator } from '../../core/ports/launchers.ts';
import type { EnvironmentProtection } from '../../domain/manifest/types.ts';
import { releaseImages, type ReleaseRef } from '../../core/ports/environments.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';
import type { DeployReview, DeployRow, EnvironmentRow, PipelineRequest } from './repository.ts';
import { checkAllowedRefs, requiredApprovals } from './protection.ts';
import { describeRelease, viaPipeline } from './deploy-run.ts';
import { emitDeployEvent } from './events.ts';
import { nothingToDeploy, releaseOf } from './release-of.ts';
import { suspendedMessage, type DeployRequest, type DirectOptions, type EnvironmentDeps, type EnvironmentService } from './service.ts';

/** A deploy as the API answers it: with its reviews. */
export type ReviewedDeploy = DeployRow & { reviews: Omit<DeployReview, 'deploy_id'>[] };

/**
 * `approved`: the held deploy (the run's `deploy_id` input) whose pipeline run this deploy action
 * belongs to (`runId`, the step's own run, never an input); not held again.
 */
export type DeployOptions = DirectOptions & { approved?: { deployId: string; runId: string } };

/** Whether the protection holds a deploy before it runs: reviewers to approve it, or a wait timer. */
export const isHeld = (p: EnvironmentProtection | null): boolean => requiredApprovals(p) > 0 || (p?.wait_seconds ?? 0) > 0;

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
   * A protected environment refuses a release from a ref its allowed_refs do not allow (422) and
   * holds the deploy for its reviewers or its wait timer (docs/environments.md, Protection).
   */
  async deploy(creator: Creator, projectId: string, name: string, request: DeployRequest, opts: DeployOptions = {}): Promise<DeployRow> {
    const env = await this.envs.get(projectId, name);
    if (env.suspended) throw new Conflict(suspendedMessage(env));
    const release = await this.releaseOf(projectId, request);
    const throughPipeline = Boolean(env.pipeline && !request.direct);
    if (env.protection) await checkAllowedRefs(this.d.manifests, env.name, env.protection, release, projectId);
    if (isHeld(env.protection) && !(opts.approved && (await this.approvedRun(env, opts.approved, release)))) {
      if (!throughPipeline && !this.hasImages(release)) throw new Invalid(nothingToDeploy(env, release), { fields: ['image_digests'] });
      const pipelineRequest = throughPipeline ? { inputs: request.inputs ?? {}, image_tag: request.image_tag ?? null } : null;
      return this.hold(creator, env, release, { pipelineRequest, rollbackOf: null });
    }
    if (throughPipeline) return viaPipeline(this.d, creator, env, release, request);
    return this.deployDirect(creator, env, release, { ...opts, rollbackOf: null });
  }

  private hasImages = (release: ReleaseRef) => Object.keys(releaseImages(release)).length > 0;

  /**
   * A deploy to an environment whose protection holds it: recorded `awaiting_approval` when it has
   * reviewers (deploy-reviews.ts moves it on), else `waiting` for its wait timer with its work item queued
   * for then. Nothing runs yet.
   */
  private async hold(
    creator: Creator,
    env: EnvironmentRow,
    release: ReleaseRef,
    opts: { pipelineRequest: PipelineRequest | null; rollbackOf: string | null },
  ): Promise<DeployRow> {
    const protection = env.protection!;
    const reviewed = requiredApprovals(protection) > 0;
    return this.d.db.transaction(async (trx) => {
      const locked = await this.envs.locked(env.project_id, env.name, trx);
      if (locked.suspended) throw new Conflict(suspendedMessage(locked));
      const runAfter = reviewed ? null : new Date(Date.now() + (protection.wait_seconds ?? 0) * 1000);
      const row = await this.d.repo.insertDeploy(
        {
          environment_id: locked.id,
          project_id: env.project_id,
          status: reviewed ? 'awaiting_approval' : 'waiting',
          release,
          previous_release: locked.current_release,
          rollback_of: opts.rollbackOf,
          direct: !opts.pipelineRequest,
          pipeline_run_id: null,
          created_by: creator.id,
          protection,
          run_after: runAfter,
          pipeline_request: opts.pipelineRequest,
        },
        trx,
      );
      const line = reviewed
        ? `environment ${env.name} is protected: the deploy of release ${describeRelease(release)} waits for ${requiredApprovals(protection)} approval(s) by its reviewers`
        : `environment ${env.name} is protected: the deploy of release ${describeRelease(release)} waits until ${runAfter!.toISOString()} (protection.wait_seconds ${protection.wait_seconds})`;
      await this.d.logs.append(row.id, [{ seq: 1, stream: 'system', line }], trx);
      await emitDeployEvent(trx, reviewed ? 'system.deploy.awaiting_approval' : 'system.deploy.waiting', locked, row, creator.id);
      if (!reviewed) await this.d.deploys.queue.enqueue(row.id, { actor_id: creator.id }, trx, runAfter!);
      return row;
    });
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
    if (!this.hasImages(release)) throw new Invalid(nothingToDeploy(env, release), { fields: ['image_digests'] });
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
    if (env.protection) await checkAllowedRefs(this.d.manifests, env.name, env.protection, release, projectId);
    if (isHeld(env.protection)) return this.hold(creator, env, release, { pipelineRequest: null, rollbackOf: previous?.id ?? null });
    return this.deployDirect(creator, env, release, { ...opts, rollbackOf: previous?.id ?? null });
  }

  async deploys(projectId: string, name: string, q: ListQuery): Promise<Page<ReviewedDeploy>> {
    const page = await this.d.repo.deploys((await this.envs.get(projectId, name)).id, q);
    return { ...page, data: await this.withReviews(page.data) };
  }

  async deployById(projectId: string, name: string, id: string): Promise<ReviewedDeploy> {
    const deploy = await this.d.repo.deployById((await this.envs.get(projectId, name)).id, id);
    if (!deploy) throw new NotFound(`deploy ${id} not found`);
    return (await this.withReviews([deploy]))[0];
  }

  /**
   * Whether `deployId` is a deploy of the environment through its pipeline that its protection held,
   * that went ahead, and whose run is `runId`: that run carries it in its inputs, and its deploy step
   * is not held again. Any other run naming it (a run started by hand with a copied `deploy_id`) is held.
   */
  private async approvedRun(env: EnvironmentRow, { deployId, runId }: { deployId: string; runId: string }, release: ReleaseRef): Promise<boolean> {
    const deploy = await this.d.repo.deployById(env.id, deployId);
    const same = deploy && deploy.release.git_sha === release.git_sha && deploy.release.tag === release.tag;
    return Boolean(same && deploy.protection && !deploy.direct && deploy.status === 'pipeline' && deploy.pipeline_run_id === runId);
  }

  /** The deploys with their reviews (approvals and rejections, oldest first). */
  async withReviews(deploys: DeployRow[]): Promise<ReviewedDeploy[]> {
    const reviews = await this.d.repo.reviewsOf(deploys.filter((d) => d.protection).map((d) => d.id));
    return deploys.map((d) => ({ ...d, reviews: reviews.filter((r) => r.deploy_id === d.id).map(({ deploy_id: _, ...r }) => r) }));
  }

  /** Nothing more happens to the deploy: it ended, or went through a pipeline. */
  deployEnded(deploy: DeployRow): boolean {
    return !['running', 'waiting', 'awaiting_approval'].includes(deploy.status);
  }

  /** Waits for the deploys running in this process (server stop). */
  drain(): Promise<void> {
    return this.d.deploys.drain();
  }
}
