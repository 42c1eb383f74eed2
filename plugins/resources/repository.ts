import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { paginate, type ListQuery, type Page } from '../../core/http/lists.ts';
import { OrgDirectoryToken, ProjectDirectoryToken, type OrgDirectory, type ProjectDirectory } from '../../core/ports/directory.ts';

export interface DocRow {
  id: string;
  org_id: string;
  project_id: string | null;
  path: string;
  current_version: number;
  deleted: boolean;
  deleted_at: Date | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface VersionRow {
  id: string;
  doc_id: string;
  version: number;
  content: string;
  size_bytes: number;
  content_hash: string;
  metadata: Record<string, unknown>;
  created_by: string | null;
  created_at: Date;
}

export type VersionMeta = Omit<VersionRow, 'content'>;

/** A document with one of its versions (the current one unless asked otherwise). */
export type DocWithVersion = DocRow & { version: VersionMeta; content?: string };

export interface DocFilters extends ListQuery {
  path?: string;
  project_id?: string;
}

const VERSION_META = ['id', 'doc_id', 'version', 'size_bytes', 'content_hash', 'metadata', 'created_by', 'created_at'] as const;
const JOINED_VERSION = VERSION_META.map((c) => `v.${c} as v_${c}`);

function splitJoined(row: Record<string, unknown>): DocRow & { version: VersionMeta } {
  const doc: Record<string, unknown> = {};
  const version: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    if (key.startsWith('v_')) version[key.slice(2)] = value;
    else doc[key] = value;
  }
  return { ...(doc as unknown as DocRow), version: version as unknown as VersionMeta };
}

@injectable()
export class DocRepository {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(OrgDirectoryToken) private readonly orgs: OrgDirectory,
  ) {}

  /** Live documents (all with include_deleted) of the org, with their current version's metadata, newest first. */
  list(orgId: string, filters: DocFilters, db: Db = this.db): Promise<Page<DocRow & { version: VersionMeta }>> {
    const query = db('org_docs')
      .join('org_doc_versions as v', (j) => j.on('v.doc_id', 'org_docs.id').andOn('v.version', 'org_docs.current_version'))
      .select(JOINED_VERSION)
      .where('org_docs.org_id', orgId);
    if (!filters.include_deleted) query.where('org_docs.deleted', false);
    if (filters.path) query.whereRaw('starts_with(org_docs.path, ?)', [filters.path]);
    if (filters.project_id) query.where('org_docs.project_id', filters.project_id);
    return paginate(query, filters, splitJoined, 'org_docs');
  }

  byId(orgId: string, docId: string, db: Db = this.db, lock = false): Promise<DocRow | undefined> {
    const query = db('org_docs').where({ id: docId, org_id: orgId });
    if (lock) query.forUpdate();
    return query.first();
  }

  liveByPath(orgId: string, path: string, db: Db = this.db): Promise<DocRow | undefined> {
    return db('org_docs').where({ org_id: orgId, path, deleted: false }).first();
  }

  version(docId: string, version: number, db: Db = this.db): Promise<VersionRow | undefined> {
    return db('org_doc_versions').where({ doc_id: docId, version }).first();
  }

  versions(docId: string, query: Pick<ListQuery, 'limit' | 'offset'>): Promise<Page<VersionMeta>> {
    const meta = this.db('org_doc_versions')
      .select([...VERSION_META])
      .where({ doc_id: docId })
      .as('org_doc_versions');
    return paginate<VersionMeta, VersionMeta>(this.db.from(meta), query, (r) => r, 'org_doc_versions');
  }

  async insertDoc(row: Omit<DocRow, 'deleted' | 'deleted_at' | 'created_at' | 'updated_at'>, db: Db): Promise<DocRow> {
    const [created] = await db('org_docs').insert(row).returning('*');
    return created;
  }

  async insertVersion(row: Omit<VersionRow, 'created_at'>, db: Db): Promise<VersionRow> {
    const [created] = await db('org_doc_versions')
      .insert({ ...row, metadata: JSON.stringify(row.metadata) })
      .returning('*');
    return created;
  }

  async setCurrent(docId: string, version: number, db: Db): Promise<DocRow> {
    const [doc] = await db('org_docs').where({ id: docId }).update({ current_version: version, updated_at: db.fn.now() }).returning('*');
    return doc;
  }

  async markDeleted(docId: string, db: Db): Promise<DocRow> {
    const [doc] = await db('org_docs').where({ id: docId }).update({ deleted: true, deleted_at: db.fn.now(), updated_at: db.fn.now() }).returning('*');
    return doc;
  }

  /** The live projects of the org (where an org-wide document's events are recorded). */
  liveProjects(orgId: string, db: Db): Promise<string[]> {
    return this.projects.liveIdsInOrg(orgId, db);
  }

  project(projectId: string, db: Db = this.db): Promise<{ id: string; org_id: string; deleted: boolean } | undefined> {
    return this.projects.byId(projectId, db);
  }

  org(orgId: string, db: Db = this.db): Promise<{ id: string; deleted: boolean } | undefined> {
    return this.orgs.byId(orgId, db);
  }
}
