import { inject, injectable } from '../../core/di.ts';
import { JobAttachmentReaderToken, type JobAttachmentReader } from '../../core/ports/jobs.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { FetchedResource, ResourceStore } from '../../core/ports/resources.ts';
import { contentHash } from './service.ts';

const DOC_TYPES: Record<string, string> = {
  md: 'text/markdown',
  markdown: 'text/markdown',
  txt: 'text/plain',
  json: 'application/json',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  html: 'text/html',
  csv: 'text/csv',
  xml: 'application/xml',
};

/** Documents are text: a type from the extension, text/plain otherwise. */
const docMimeType = (path: string) => DOC_TYPES[/\.([A-Za-z0-9]+)$/.exec(path)?.[1].toLowerCase() ?? ''] ?? 'text/plain';

/**
 * The ResourceStore port (core/ports/resources.ts) over org documents and job attachments (asked of
 * the jobs domain, for jobs of the asking project only).
 */
@injectable()
export class DbResourceStore implements ResourceStore {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(JobAttachmentReaderToken) private readonly attachments: JobAttachmentReader,
  ) {}

  async orgDoc(where: { orgId: string; projectId: string }, path: string, version: number | null): Promise<FetchedResource | null> {
    const row = await this.db('org_docs as d')
      .join('org_doc_versions as v', 'v.doc_id', 'd.id')
      .where({ 'd.org_id': where.orgId, 'd.path': path, 'd.deleted': false })
      .where((q) => q.whereNull('d.project_id').orWhere('d.project_id', where.projectId))
      .where('v.version', version ?? this.db.ref('d.current_version'))
      .first('v.content', 'v.size_bytes', 'v.content_hash', 'v.version');
    if (!row) return null;
    return {
      content: Buffer.from(row.content, 'utf8'),
      size_bytes: row.size_bytes,
      content_hash: row.content_hash,
      mime_type: docMimeType(path),
      version: row.version,
    };
  }

  async jobAttachment(projectId: string, jobId: string, name: string): Promise<FetchedResource | null> {
    const row = await this.attachments.read(projectId, jobId, name);
    if (!row) return null;
    return { content: row.content, size_bytes: row.size_bytes, content_hash: contentHash(row.content), mime_type: row.mime_type, version: null };
  }
}
