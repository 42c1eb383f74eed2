import { Conflict, Forbidden, Invalid, NotFound } from '../../core/errors.ts';
import type { Db } from '../../core/db/knex.ts';
import type { UserDirectory } from '../../core/ports/directory.ts';
import type { GroupMembership } from '../../core/ports/groups.ts';
import type { WorkItem } from '../../core/work/repository.ts';
import type { DeployRow, EnvironmentRow } from './repository.ts';
import { emitDeployEvent } from './events.ts';
import { viaPipeline } from './deploy-run.ts';
import { isReviewer, requiredApprovals, reviewersOf } from './protection.ts';
import { suspendedMessage, type EnvironmentDeps, type EnvironmentService } from './service.ts';
import type { DeployService, ReviewedDeploy } from './deploy-service.ts';

export interface ReviewDeps {
  users: UserDirectory;
  /** The access domain's groups; null when the access plugin is not loaded (group reviewers match no one). */
  groups: () => GroupMembership | null;
}

const describeReviewers = (deploy: DeployRow) =>
  reviewersOf(deploy.protection)
    .map((r) => ('user' in r ? `user ${r.user}` : `group ${r.group}`))
    .join(', ');

/**
 * Approvals and rejections of deploys held by their environment's protection, and moving a held
 * deploy on once its time has come: it runs here (direct) or starts its pipeline, or waits for
 * its wait timer on the work engine (deploys.ts claims it then and calls `due`).
 */
export class DeployReviews {
  constructor(
    private readonly d: EnvironmentDeps & ReviewDeps,
    private readonly envs: EnvironmentService,
    private readonly deploys: DeployService,
  ) {
    d.deploys.onDue((deploy, actorId) => this.due(deploy, actorId));
  }

  /**
   * A reviewer's approval: 403 unless the user is one of the deploy's reviewers, 409 unless it
   * awaits approval or when they approved it already, 422 for its own creator. The approval that
   * reaches required_approvals moves it on in the same transaction (409 while another deploy of the
   * environment runs: nothing is recorded then).
   */
  async approve(userId: string, projectId: string, name: string, deployId: string, comment: string | null): Promise<ReviewedDeploy> {
    const env = await this.envs.get(projectId, name);
    let item: WorkItem | null = null;
    let launching = false;
    await this.d.db.transaction(async (trx) => {
      const deploy = await this.reviewable(env, deployId, userId, 'approve', trx);
      if (deploy.created_by === userId) throw new Invalid(`deploy ${deployId} was created by you: another of its reviewers must approve it`);
      const approvals = (await this.d.repo.reviewsOf([deployId], trx)).filter((r) => r.decision === 'approved').length + 1;
      await this.d.repo.addReview({ deploy_id: deployId, user_id: userId, decision: 'approved', comment }, trx);
      const required = requiredApprovals(deploy.protection);
      const review = { comment, approvals, required_approvals: required };
      if (approvals < required) {
        await emitDeployEvent(trx, 'system.deploy.approved', env, deploy, userId, review);
        await this.log(deploy.id, `approved by ${userId} (${approvals} of ${required} approvals)`, trx);
        return;
      }
      const runAfter = new Date(deploy.created_at.getTime() + (deploy.protection?.wait_seconds ?? 0) * 1000);
      if (runAfter.getTime() > Date.now()) {
        const waiting = await this.d.repo.advanceDeploy(deploy.id, { status: 'waiting', run_after: runAfter }, trx);
        await emitDeployEvent(trx, 'system.deploy.approved', env, waiting, userId, review);
        await this.log(deploy.id, `approved by ${userId}: the deploy waits until ${runAfter.toISOString()} (protection.wait_seconds)`, trx);
        await this.d.deploys.queue.enqueue(deploy.id, { actor_id: userId }, trx, runAfter);
        return;
      }
      await emitDeployEvent(trx, 'system.deploy.approved', env, deploy, userId, review);
      await this.log(deploy.id, `approved by ${userId}: the deploy goes ahead`, trx);
      if (deploy.direct) {
        item = await this.d.deploys.accept(await this.startDirect(deploy, userId, trx), userId, trx);
        return;
      }
      // Through the pipeline: `waiting` until its run has started, by its work item here (or, if this
      // process dies first, by an orchestrator's); a second approval meanwhile is 409, not a second run.
      await this.d.repo.advanceDeploy(deploy.id, { status: 'waiting', run_after: new Date() }, trx);
      item = await this.d.deploys.accept(deploy, userId, trx);
      launching = true;
    });
    if (item && launching) await this.d.deploys.start(item);
    else if (item) void this.d.deploys.start(item);
    return this.deploys.deployById(projectId, name, deployId);
  }

  /** A reviewer's rejection: the deploy ends `rejected` with who rejected it and why; nothing runs. */
  async reject(userId: string, projectId: string, name: string, deployId: string, comment: string | null): Promise<ReviewedDeploy> {
    const env = await this.envs.get(projectId, name);
    await this.d.db.transaction(async (trx) => {
      const deploy = await this.reviewable(env, deployId, userId, 'reject', trx);
      await this.d.repo.addReview({ deploy_id: deployId, user_id: userId, decision: 'rejected', comment }, trx);
      const message = `rejected by ${userId}${comment ? `: ${comment}` : ''}`;
      const ended = await this.d.repo.finishDeploy(deploy.id, { status: 'rejected', error_message: message, services: [] }, trx);
      const approvals = (await this.d.repo.reviewsOf([deployId], trx)).filter((r) => r.decision === 'approved').length;
      await emitDeployEvent(trx, 'system.deploy.rejected', env, ended, userId, {
        comment,
        approvals,
        required_approvals: requiredApprovals(deploy.protection),
      });
      await this.log(deploy.id, `deploy ${message}`, trx);
    });
    return this.deploys.deployById(projectId, name, deployId);
  }

  /** The deploy, locked, when the user may review it now: 404, 403 for a non-reviewer, 409 unless it awaits approval or when they reviewed it. */
  private async reviewable(env: EnvironmentRow, deployId: string, userId: string, what: string, trx: Db): Promise<DeployRow> {
    const deploy = await this.d.repo.deployById(env.id, deployId, trx);
    if (!deploy) throw new NotFound(`deploy ${deployId} not found`);
    const orgId = (await this.d.projects.byId(env.project_id, trx))?.org_id;
    if (!orgId || !(await isReviewer(this.d, deploy.protection, orgId, userId)))
      throw new Forbidden(
        deploy.protection && reviewersOf(deploy.protection).length
          ? `only a reviewer of environment ${env.name} may ${what} deploy ${deployId}: ${describeReviewers(deploy)}`
          : `deploy ${deployId} has no reviewers: there is nothing to ${what}`,
      );
    if (deploy.status !== 'awaiting_approval') throw new Conflict(`deploy ${deployId} is ${deploy.status}, not awaiting approval`);
    if ((await this.d.repo.reviewsOf([deployId], trx)).some((r) => r.user_id === userId))
      throw new Conflict(`you have already reviewed deploy ${deployId}: another reviewer's approval is needed`);
    return deploy;
  }

  /** In `trx`: the held direct deploy starts (`system.deploy.started`); 409 while another deploy of the environment runs, or it is suspended. */
  private async startDirect(deploy: DeployRow, actorId: string | null, trx: Db): Promise<DeployRow> {
    const env = await this.d.repo.byId(deploy.environment_id, trx);
    const locked = env && (await this.envs.locked(env.project_id, env.name, trx));
    if (!locked) throw new NotFound(`environment ${deploy.environment_id} not found`);
    if (locked.suspended) throw new Conflict(suspendedMessage(locked));
    const busy = await this.d.repo.runningDeploy(locked.id, trx);
    if (busy) throw new Conflict(`environment ${locked.name} is being deployed (${busy.id}): deploy ${deploy.id} can start once that one ended`);
    const running = await this.d.repo.advanceDeploy(deploy.id, { status: 'running' }, trx);
    await emitDeployEvent(trx, 'system.deploy.started', locked, running, actorId);
    return running;
  }

  /** A held deploy through the environment's pipeline starts its run; a failure to start it ends the deploy failed. */
  private async launch(deploy: DeployRow, actorId: string | null): Promise<void> {
    const env = await this.d.repo.byId(deploy.environment_id);
    if (!env) return;
    try {
      await viaPipeline(
        this.d,
        { id: deploy.created_by ?? actorId ?? 'system' },
        env,
        deploy.release,
        { inputs: deploy.pipeline_request?.inputs ?? {}, image_tag: deploy.pipeline_request?.image_tag ?? undefined },
        deploy,
      );
    } catch (err) {
      await this.d.db.transaction(async (trx) => {
        const message = `the pipeline could not be started: ${(err as Error).message}`;
        const ended = await this.d.repo.finishDeploy(deploy.id, { status: 'failed', error_message: message, services: [] }, trx);
        await this.log(deploy.id, `deploy failed: ${message}`, trx);
        await emitDeployEvent(trx, 'system.deploy.failed', env, ended, actorId);
      });
    }
  }

  /**
   * A waiting deploy's timer ran out (its work item, deploys.ts): a direct one starts and is answered
   * for the work item to carry out; one through a pipeline starts its run (null). A conflict (another
   * deploy running) throws: the work item retries later.
   */
  private async due(deploy: DeployRow, actorId: string | null): Promise<DeployRow | null> {
    if (!deploy.direct) {
      await this.launch(deploy, actorId);
      return null;
    }
    return this.d.db.transaction(async (trx) => {
      const locked = await this.d.repo.deployRow(deploy.id, trx);
      return locked?.status === 'waiting' ? this.startDirect(locked, actorId, trx) : null;
    });
  }

  private async log(deployId: string, line: string, trx: Db): Promise<void> {
    await this.d.logs.append(deployId, [{ seq: (await this.d.logs.lastSeq(deployId, trx)) + 1, stream: 'system', line }], trx);
  }
}
