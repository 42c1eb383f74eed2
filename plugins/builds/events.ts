import type { Db } from '../../core/db/knex.ts';
import { emitEvent } from '../../core/events/emit.ts';
import type { BuildRun, BuildSpec } from './repository.ts';

export type BuildEventType = 'system.build.started' | 'system.build.completed' | 'system.build.failed' | 'system.build.cancelled';

/**
 * A build run's `system.build.*` event, in the transaction that records the run's change, so a
 * trigger or webhook sees it exactly when the change is visible. `image_digests` is set on completion.
 */
export function emitBuildEvent(
  trx: Db,
  type: BuildEventType,
  spec: BuildSpec,
  run: Pick<BuildRun, 'id' | 'status' | 'backend' | 'created_by' | 'reused_from'> & Partial<Pick<BuildRun, 'error_class' | 'error_message' | 'failed_stage'>>,
  imageDigests: Record<string, string> | null = null,
): Promise<unknown> {
  return emitEvent(trx, {
    project_id: spec.project_id,
    type,
    source: 'system',
    ref_sha: spec.git_sha,
    actor_type: 'system',
    actor_id: run.created_by,
    payload: {
      build_id: spec.id,
      run_id: run.id,
      status: run.status,
      git_sha: spec.git_sha,
      manifest_hash: spec.manifest_hash,
      services: spec.services,
      backend: run.backend,
      reused_from: run.reused_from,
      image_digests: imageDigests,
      error_class: run.error_class ?? null,
      error_message: run.error_message ?? null,
      failed_stage: run.failed_stage ?? null,
      pipeline_run_id: spec.inputs.pipeline_run_id ?? null,
    },
  });
}

/** `system.release.created`, in the transaction that inserts the release. */
export function emitReleaseCreated(
  trx: Db,
  release: {
    id: string;
    project_id: string;
    tag: string;
    version: string | null;
    build_id: string;
    git_sha: string;
    manifest_hash: string;
    image_digests: Record<string, string>;
    created_by: string | null;
  },
): Promise<unknown> {
  return emitEvent(trx, {
    project_id: release.project_id,
    type: 'system.release.created',
    source: 'system',
    ref_sha: release.git_sha,
    actor_type: 'system',
    actor_id: release.created_by,
    payload: {
      release_id: release.id,
      tag: release.tag,
      version: release.version,
      build_id: release.build_id,
      git_sha: release.git_sha,
      manifest_hash: release.manifest_hash,
      image_digests: release.image_digests,
    },
  });
}
