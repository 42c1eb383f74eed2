import type { Logger } from 'pino';
import type { Db } from '../../core/db/knex.ts';
import { DeployFailed, releaseImages, releaseName, type Deployer, type DeployOutcome, type ReleaseRef } from '../../core/ports/environments.ts';
import type { DeployRow, EnvironmentRepository, EnvironmentRow } from './repository.ts';
import type { DeployTargets } from './targets.ts';
import type { DeployRequest } from './service.ts';
import type { Creator, PipelineLauncher } from '../../core/ports/launchers.ts';
import { Invalid } from '../../core/errors.ts';
import type { DeployLogs } from './deploy-logs.ts';
import { emitDeployEvent, emitHealthChanged } from './events.ts';

export interface DeployRunDeps {
  db: Db;
  repo: EnvironmentRepository;
  targets: DeployTargets;
  deployer: () => Deployer;
  logs: DeployLogs;
  logger: Logger;
}

/** How this run of a deploy goes: who else hears the deployer, the lease its final writes stand behind, the attempt. */
export interface CarryOutOptions {
  /** Hears the deployer's lines too (a pipeline's deploy step writes them to its own log). */
  echo?: (line: string) => void;
  /** The work engine's fence (core/work): throws LeaseLost when another process took the deploy over; nothing is written then. */
  fence(trx: Db): Promise<void>;
  /** 1 for the process that accepted the deploy; more when one took it over after the earlier owner died. */
  attempt: number;
}

/** Records the deployer's health reading on the environment, emitting `system.environment.health.changed` on a change. */
export async function recordHealth(d: Pick<DeployRunDeps, 'db' | 'repo'>, env: EnvironmentRow, outcome: DeployOutcome, trx?: Db): Promise<EnvironmentRow> {
  const write = async (t: Db) => {
    const updated = await d.repo.update(env.id, { health: outcome.health, health_detail: outcome.services, health_checked_at: new Date() }, t);
    if (updated.health !== env.health) await emitHealthChanged(t, updated, env.health, outcome.services);
    return updated;
  };
  return trx ? write(trx) : d.db.transaction(write);
}

/** `v1.2.0 (rel_…, git 0123456789ab)`: the release's name and what else identifies it. */
export function describeRelease(r: ReleaseRef): string {
  const more = [r.tag && r.id ? r.id : null, r.git_sha && (r.tag || r.id) ? `git ${r.git_sha.slice(0, 12)}` : null].filter(Boolean);
  return more.length ? `${releaseName(r)} (${more.join(', ')})` : releaseName(r);
}

const healthOf = (outcome: DeployOutcome) =>
  `health ${outcome.health}${outcome.services.length ? ` (${outcome.services.map((s) => `${s.service}: ${s.detail}`).join('; ')})` : ''}`;

/**
 * Carries a recorded direct deploy out on the deployer: on success the release becomes current, on
 * failure the previous one keeps serving and the deploy says so. Its log gets svc's lines (what is
 * deployed where, what serves meanwhile, the outcome and why) and the deployer's progress, with the
 * deploy's secret values masked (in the log, the error and the services' details alike). It runs
 * as a work item (deploys.ts): its final writes stand behind the lease (`fence`), and a process that
 * takes it over from a dead one carries it out again from the start, its log going on after the lines
 * already written.
 */
export async function carryOut(d: DeployRunDeps, env: EnvironmentRow, deploy: DeployRow, actorId: string | null, opts: CarryOutOptions): Promise<DeployRow> {
  const { echo } = opts;
  // After the lines already written: an earlier owner's, or those of the deploy's wait for approval.
  const log = d.logs.writer(deploy.id, d.logger, await d.logs.lastSeq(deploy.id));
  const deployer = d.deployer();
  if (opts.attempt > 1) log.write(`the process that ran this deploy stopped before it ended: carrying it out again here (attempt ${opts.attempt})`, 'system');
  const images = Object.entries(releaseImages(deploy.release)).map(([service, digest]) => `${service} ${digest}`);
  log.write(
    `deploying release ${describeRelease(deploy.release)} to environment ${env.name} on the ${deployer.name} deployer${deploy.rollback_of ? ` (a rollback to the release of ${deploy.rollback_of})` : ''}: ${images.join(', ')}`,
    'system',
  );
  log.write(env.current_release ? `release ${releaseName(env.current_release)} serves now` : 'nothing serves the environment yet', 'system');
  let outcome: DeployOutcome | null = null;
  let error: string | null = null;
  let services: DeployOutcome['services'] = [];
  try {
    const { target, secrets } = await d.targets.resolved(env, deploy.release);
    log.mask(secrets);
    const progress = (line: string) => {
      const kept = log.write(line);
      echo?.(kept);
    };
    outcome = await deployer.deploy(target, deploy.release, { progress });
    services = outcome.services;
  } catch (err) {
    if (err instanceof DeployFailed) services = err.services;
    else d.logger.error({ err, deployId: deploy.id }, 'deploy failed in the deployer');
    const previous = env.current_release ? `release ${releaseName(env.current_release)}` : null;
    const serving = !previous
      ? 'nothing was serving before'
      : err instanceof DeployFailed && !err.previousServes
        ? `${previous} was stopped for the deploy and did not come back healthy`
        : `${previous} keeps serving`;
    error = log.clean(`${(err as Error).message} (${serving})`);
  }
  services = services.map((s) => ({ ...s, detail: log.clean(s.detail) }));
  await log.written();
  return d.db.transaction(async (trx) => {
    await opts.fence(trx);
    const locked = (await d.repo.lock(env.project_id, env.name, trx)) ?? env;
    const finished = await d.repo.finishDeploy(deploy.id, { status: outcome ? 'succeeded' : 'failed', error_message: error, services }, trx);
    if (outcome) {
      await d.repo.update(locked.id, { current_release: deploy.release }, trx);
      await recordHealth(d, locked, { ...outcome, services }, trx);
    }
    await log.end(
      [
        outcome
          ? `deploy succeeded: release ${releaseName(deploy.release)} serves environment ${env.name}, ${healthOf({ ...outcome, services })}`
          : `deploy failed: ${error}`,
      ],
      trx,
    );
    await emitDeployEvent(trx, outcome ? 'system.deploy.succeeded' : 'system.deploy.failed', locked, finished, actorId);
    return finished;
  });
}

/**
 * A deploy through the environment's pipeline: the run starts with the release in its inputs (over
 * the request's, the environment's own pipeline_inputs beneath both); the deploy is recorded with
 * status `pipeline` and the run's id (a held deploy, `held`, moves on to it), and the pipeline's
 * `deploy` step does the deploy.
 */
export async function viaPipeline(
  d: Pick<DeployRunDeps, 'db' | 'repo' | 'logs'> & { pipelines: () => PipelineLauncher | null },
  creator: Creator,
  env: EnvironmentRow,
  release: ReleaseRef,
  request: Pick<DeployRequest, 'inputs' | 'image_tag'>,
  held?: DeployRow,
): Promise<DeployRow> {
  const launcher = d.pipelines();
  if (!launcher)
    throw new Invalid(`environment ${env.name} deploys through pipeline ${env.pipeline}, but the pipelines plugin is not loaded (deploy with "direct": true)`);
  const inputs = {
    ...(request.inputs ?? {}),
    ...(release.id ? { release_id: release.id } : {}),
    ...(release.tag ? { release_tag: release.tag } : {}),
    ...(release.git_sha ? { git_sha: release.git_sha } : {}),
    ...(release.manifest_hash ? { manifest_hash: release.manifest_hash } : {}),
    ...(Object.keys(release.image_digests).length ? { image_digests: release.image_digests } : {}),
    ...(request.image_tag ? { image_tag: request.image_tag } : {}),
    // The approved deploy the run carries out: its deploy step is not held again (actions.ts).
    ...(held ? { deploy_id: held.id } : {}),
  };
  const { run_id } = await launcher.runPipeline(creator, env.project_id, env.pipeline!, {
    env: env.name,
    env_inputs: env.pipeline_inputs,
    inputs,
    ...(release.git_sha ? { ref: release.git_sha } : {}),
  });
  return d.db.transaction(async (trx) => {
    const row = held
      ? await d.repo.advanceDeploy(held.id, { status: 'pipeline', pipeline_run_id: run_id }, trx)
      : await d.repo.insertDeploy(
          {
            environment_id: env.id,
            project_id: env.project_id,
            status: 'pipeline',
            release,
            previous_release: env.current_release,
            rollback_of: null,
            direct: false,
            pipeline_run_id: run_id,
            created_by: creator.id,
          },
          trx,
        );
    const line = `deploying release ${describeRelease(release)} to environment ${env.name} through pipeline ${env.pipeline}: run ${run_id} (its deploy step's deploy has its own log)`;
    await d.logs.append(row.id, [{ seq: (await d.logs.lastSeq(row.id, trx)) + 1, stream: 'system', line }], trx);
    return row;
  });
}
