import type { Db } from '../../core/db/knex.ts';
import { emitEvent } from '../../core/events/emit.ts';
import type { Principal } from '../../core/auth/principal.ts';
import type { DocRow, VersionMeta } from './repository.ts';

export type DocEventType = 'system.doc.created' | 'system.doc.updated' | 'system.doc.deleted';

/** Who asked for the change: the caller's mutation id (optional) and the request id. */
export interface MutationContext {
  principal: Principal;
  mutationId: string | null;
  requestId: string;
}

/**
 * A `system.doc.*` event with exactly the spec's payload, in the transaction of the change. Events
 * live on a project: a document of one project records its events there; an org-wide document
 * records one on every live project of its org (so each project's triggers and webhooks see it),
 * and none when the org has no project yet.
 */
export async function emitDocEvent(trx: Db, type: DocEventType, doc: DocRow, version: VersionMeta, ctx: MutationContext, projects: string[]): Promise<void> {
  const payload: Record<string, unknown> = {
    org_id: doc.org_id,
    project_id: doc.project_id,
    doc_id: doc.id,
    ...(type === 'system.doc.deleted' ? {} : { doc_version_id: version.id }),
    path: doc.path,
    version: version.version,
    content_hash: version.content_hash,
    mutation_id: ctx.mutationId,
    request_id: ctx.requestId,
    metadata: version.metadata,
  };
  for (const projectId of doc.project_id ? [doc.project_id] : projects) {
    await emitEvent(trx, {
      project_id: projectId,
      type,
      source: 'system',
      payload,
      actor_type: ctx.principal.kind === 'user' ? 'user' : 'app',
      actor_id: ctx.principal.id,
      mutation_id: ctx.mutationId,
      request_id: ctx.requestId,
    });
  }
}
