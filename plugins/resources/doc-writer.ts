import { inject, injectable } from '../../core/di.ts';
import { Access } from '../../core/auth/access.ts';
import { BadRequest } from '../../core/errors.ts';
import { normalizeDocPath, type DocWriteContext, type OrgDocuments } from '../../core/ports/resources.ts';
import { DocRepository } from './repository.ts';
import { DocService } from './service.ts';

/** The OrgDocuments port: create the document at a path, or add a version to the live one there. */
@injectable()
export class DocWriter implements OrgDocuments {
  constructor(
    @inject(DocService) private readonly service: DocService,
    @inject(DocRepository) private readonly docs: DocRepository,
    @inject(Access) private readonly access: Access,
  ) {}

  async write(
    orgId: string,
    doc: { path: string; content: string; metadata: Record<string, unknown>; project_id: string | null },
    ctx: DocWriteContext,
  ): Promise<{ id: string; path: string; version: number; created: boolean }> {
    await this.access.authorize(ctx.principal, 'orgdocs:write', { org: orgId });
    const normalized = normalizeDocPath(doc.path);
    if ('error' in normalized) throw new BadRequest(`"path" ${normalized.error}`, { fields: ['path'] });
    const mutation = { principal: ctx.principal, mutationId: null, requestId: ctx.requestId };
    const live = await this.docs.liveByPath(orgId, normalized.path);
    const written = live
      ? await this.service.update(orgId, live.id, { content: doc.content, metadata: doc.metadata }, mutation)
      : await this.service.create(orgId, { path: normalized.path, content: doc.content, metadata: doc.metadata, project_id: doc.project_id }, mutation);
    return { id: written.id, path: written.path, version: written.version.version, created: !live };
  }
}
