import type { Db } from '../../core/db/knex.ts';
import { emitEvent } from '../../core/events/emit.ts';
import type { EnvironmentHealth, ServiceHealth } from '../../core/ports/environments.ts';
import type { DeployRow, EnvironmentRow } from './repository.ts';

export type DeployEventType =
  | 'system.deploy.started'
  | 'system.deploy.succeeded'
  | 'system.deploy.failed'
  | 'system.deploy.awaiting_approval'
  | 'system.deploy.waiting'
  | 'system.deploy.approved'
  | 'system.deploy.rejected';

/** A reviewer's decision, on `system.deploy.approved` / `.rejected` (whose actor is the reviewer). */
export interface ReviewDetail {
  comment: string | null;
  approvals: number;
  required_approvals: number;
}

/** A deploy's `system.deploy.*` event, in the transaction that records the deploy's change. */
export function emitDeployEvent(
  trx: Db,
  type: DeployEventType,
  env: EnvironmentRow,
  deploy: DeployRow,
  actorId: string | null,
  review?: ReviewDetail,
): Promise<unknown> {
  return emitEvent(trx, {
    project_id: env.project_id,
    type,
    source: 'system',
    env_name: env.name,
    ref_sha: deploy.release.git_sha,
    actor_type: review ? 'user' : 'system',
    actor_id: actorId,
    payload: {
      deploy_id: deploy.id,
      environment_id: env.id,
      env_name: env.name,
      status: deploy.status,
      release_id: deploy.release.id,
      release_tag: deploy.release.tag,
      git_sha: deploy.release.git_sha,
      image_digests: deploy.release.image_digests,
      ...(deploy.release.image_tag ? { image_tag: deploy.release.image_tag, images: deploy.release.images } : {}),
      rollback_of: deploy.rollback_of,
      error_message: deploy.error_message,
      services: deploy.services,
      ...(deploy.run_after ? { run_after: deploy.run_after } : {}),
      ...(review ?? {}),
    },
  });
}

/** `system.environment.health.changed` when the health read from the runtime differs from the stored one. */
export function emitHealthChanged(trx: Db, env: EnvironmentRow, previous: EnvironmentHealth, services: ServiceHealth[]): Promise<unknown> {
  return emitEvent(trx, {
    project_id: env.project_id,
    type: 'system.environment.health.changed',
    source: 'system',
    env_name: env.name,
    actor_type: 'system',
    payload: { environment_id: env.id, env_name: env.name, previous, health: env.health, services },
  });
}

/** `system.environment.suspended` / `.resumed`. */
export function emitSuspension(trx: Db, env: EnvironmentRow, type: 'system.environment.suspended' | 'system.environment.resumed', actorId: string | null) {
  return emitEvent(trx, {
    project_id: env.project_id,
    type,
    source: 'system',
    env_name: env.name,
    actor_type: actorId ? 'user' : 'system',
    actor_id: actorId,
    payload: { environment_id: env.id, env_name: env.name, reason: env.suspended_reason },
  });
}
