import { createHash } from 'node:crypto';
import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { isUniqueViolation } from '../../core/http/unique.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';
import { DocRepository, type DocFilters, type DocRow, type DocWithVersion, type VersionMeta, type VersionRow } from './repository.ts';
import { emitDocEvent, type DocEventType, type MutationContext } from './events.ts';

/** Document content is text; at most this many bytes of UTF-8. */
export const MAX_DOC_BYTES = 1024 * 1024;

export const contentHash = (content: Buffer | string) => `sha256:${createHash('sha256').update(content).digest('hex')}`;

export interface NewDoc {
  path: string;
  content: string;
  metadata?: Record<string, unknown>;
  project_id?: string | null;
  mutation_id?: string;
}

export interface DocUpdate {
  content: string;
  metadata?: Record<string, unknown>;
  expected_version?: number;
  mutation_id?: string;
}

const meta = ({ content: _content, ...version }: VersionRow): VersionMeta => version;

/** Org documents: every write is a new version, in one transaction with its `system.doc.*` event. */
@injectable()
export class DocService {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(DocRepository) private readonly docs: DocRepository,
  ) {}

  list(orgId: string, filters: DocFilters): Promise<Page<DocRow & { version: VersionMeta }>> {
    return this.docs.list(orgId, filters);
  }

  async create(orgId: string, input: NewDoc, ctx: MutationContext): Promise<DocWithVersion> {
    const size = checkSize(input.content);
    try {
      return await this.db.transaction(async (trx) => {
        const org = await this.docs.org(orgId, trx);
        if (!org || org.deleted) throw Boom.badData(`org ${orgId} is deleted`);
        if (input.project_id) {
          const project = await this.docs.project(input.project_id, trx);
          if (!project || project.org_id !== orgId || project.deleted)
            throw Boom.badData(`project_id ${input.project_id} is not a live project of org ${orgId}`);
        }
        const doc = await this.docs.insertDoc(
          { id: newId('doc'), org_id: orgId, project_id: input.project_id ?? null, path: input.path, current_version: 1, created_by: ctx.principal.id },
          trx,
        );
        const version = await this.addVersion(doc, 1, input.content, size, input.metadata ?? {}, ctx, trx);
        await this.emit(trx, 'system.doc.created', doc, version, ctx);
        return { ...doc, version, content: input.content };
      });
    } catch (e) {
      if (isUniqueViolation(e, 'org_docs_live_path')) throw Boom.conflict(`org ${orgId} already has a document at ${input.path}`);
      throw e;
    }
  }

  /** The document with one version's content (the current one by default); a deleted document is shown with `deleted: true`. */
  async get(orgId: string, docId: string, version?: number): Promise<DocWithVersion> {
    const doc = (await this.docs.byId(orgId, docId)) ?? notFound(docId);
    return this.withVersion(doc, version);
  }

  /** The live document at `path`. */
  async getByPath(orgId: string, path: string, version?: number): Promise<DocWithVersion> {
    const doc = await this.docs.liveByPath(orgId, path);
    if (!doc) throw Boom.notFound(`no document at ${path} in org ${orgId}`);
    return this.withVersion(doc, version);
  }

  async versions(orgId: string, docId: string, query: ListQuery): Promise<Page<VersionMeta>> {
    (await this.docs.byId(orgId, docId)) ?? notFound(docId);
    return this.docs.versions(docId, query);
  }

  /** A new version; metadata left out carries over from the version before. */
  async update(orgId: string, docId: string, input: DocUpdate, ctx: MutationContext): Promise<DocWithVersion> {
    const size = checkSize(input.content);
    return this.db.transaction(async (trx) => {
      const doc = await this.lockLive(orgId, docId, input.expected_version, trx);
      const previous = (await this.docs.version(doc.id, doc.current_version, trx))!;
      const next = doc.current_version + 1;
      const version = await this.addVersion(doc, next, input.content, size, input.metadata ?? previous.metadata, ctx, trx);
      const updated = await this.docs.setCurrent(doc.id, next, trx);
      await this.emit(trx, 'system.doc.updated', updated, version, ctx);
      return { ...updated, version, content: input.content };
    });
  }

  /** Soft delete: the versions stay, the path is free for a new document. */
  async remove(orgId: string, docId: string, expectedVersion: number | undefined, ctx: MutationContext): Promise<void> {
    await this.db.transaction(async (trx) => {
      const doc = await this.lockLive(orgId, docId, expectedVersion, trx);
      const current = (await this.docs.version(doc.id, doc.current_version, trx))!;
      const deleted = await this.docs.markDeleted(doc.id, trx);
      await this.emit(trx, 'system.doc.deleted', deleted, meta(current), ctx);
    });
  }

  private async lockLive(orgId: string, docId: string, expected: number | undefined, trx: Db): Promise<DocRow> {
    const doc = (await this.docs.byId(orgId, docId, trx, true)) ?? notFound(docId);
    if (doc.deleted) throw Boom.conflict(`document ${docId} is deleted`);
    if (expected !== undefined && expected !== doc.current_version) {
      throw Boom.conflict(`document ${docId} is at version ${doc.current_version}, not the expected_version ${expected}`, {
        current_version: doc.current_version,
      });
    }
    return doc;
  }

  private async addVersion(
    doc: DocRow,
    version: number,
    content: string,
    size: number,
    metadata: Record<string, unknown>,
    ctx: MutationContext,
    trx: Db,
  ): Promise<VersionMeta> {
    const row = await this.docs.insertVersion(
      { id: newId('docv'), doc_id: doc.id, version, content, size_bytes: size, content_hash: contentHash(content), metadata, created_by: ctx.principal.id },
      trx,
    );
    return meta(row);
  }

  private async emit(trx: Db, type: DocEventType, doc: DocRow, version: VersionMeta, ctx: MutationContext): Promise<void> {
    const projects = doc.project_id ? [] : await this.docs.liveProjects(doc.org_id, trx);
    await emitDocEvent(trx, type, doc, version, ctx, projects);
  }

  private async withVersion(doc: DocRow, version: number | undefined): Promise<DocWithVersion> {
    const wanted = version ?? doc.current_version;
    const row = await this.docs.version(doc.id, wanted);
    if (!row) throw Boom.notFound(`document ${doc.id} has no version ${wanted} (current: ${doc.current_version})`);
    return { ...doc, version: meta(row), content: row.content };
  }
}

function checkSize(content: string): number {
  const size = Buffer.byteLength(content, 'utf8');
  if (size > MAX_DOC_BYTES) throw Boom.entityTooLarge(`document content is ${size} bytes; the limit is ${MAX_DOC_BYTES} bytes (1 MiB) of UTF-8`);
  return size;
}

function notFound(docId: string): never {
  throw Boom.notFound(`document ${docId} not found`);
}
