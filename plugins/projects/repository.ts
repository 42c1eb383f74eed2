import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { Access } from '../../core/auth/access.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';
import { OrgDirectoryToken, type OrgDirectory, type ProjectEntry } from '../../core/ports/directory.ts';
import { SharedMemos, type SharedMemo } from '../../core/db/shared-memos.ts';

export interface ProjectRow {
  id: string;
  org_id: string;
  name: string;
  slug: string;
  repo_url: string | null;
  branch: string;
  deleted: boolean;
  deleted_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const toProject = (r: ProjectRow) => ({
  id: r.id,
  org_id: r.org_id,
  name: r.name,
  slug: r.slug,
  repo_url: r.repo_url,
  branch: r.branch,
  deleted: r.deleted,
  created_at: r.created_at,
  updated_at: r.updated_at,
});
export type Project = ReturnType<typeof toProject>;

export type ProjectFields = Pick<ProjectRow, 'id' | 'org_id' | 'name' | 'slug' | 'repo_url' | 'branch'>;

/** Projects' directory entries remembered per process; forgotten when a project changes (ProjectRepository.update). */
export const projectsMemo = (memos: SharedMemos): SharedMemo<ProjectEntry> => memos.memo('projects', /^\s*(?:update|delete\s+from)\s+"?projects"?[\s(]/i);

@injectable()
export class ProjectRepository {
  private readonly liveness: SharedMemo<ProjectEntry>;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Access) private readonly access: Access,
    @inject(OrgDirectoryToken) private readonly orgs: OrgDirectory,
    @inject(SharedMemos) memos: SharedMemos,
  ) {
    this.liveness = projectsMemo(memos);
  }

  async list(principal: Principal, query: ListQuery & { org_id?: string }) {
    let q = this.access.visibleProjects(principal, this.db('projects'));
    if (query.org_id) q = q.where('projects.org_id', query.org_id);
    if (!query.include_deleted) {
      q = q.where('projects.deleted', false).whereNotIn('projects.org_id', await this.orgs.deletedIds());
    }
    return paginate<ProjectRow, Project>(q, query, toProject, 'projects');
  }

  byId(id: string, trx: Db = this.db): Promise<ProjectRow | undefined> {
    return trx('projects').where({ id }).first();
  }

  bySlug(slug: string, trx: Db = this.db): Promise<ProjectRow | undefined> {
    return trx('projects').where({ slug }).first();
  }

  byName(orgId: string, name: string, trx: Db = this.db): Promise<ProjectRow | undefined> {
    return trx('projects').where({ org_id: orgId, name, deleted: false }).orderBy('created_at').first();
  }

  async insert(row: ProjectFields, trx: Db = this.db): Promise<ProjectRow> {
    const [created] = await trx('projects').insert(row).returning('*');
    return created;
  }

  async update(id: string, changes: Partial<Pick<ProjectRow, 'name' | 'repo_url' | 'branch' | 'deleted'>>): Promise<ProjectRow> {
    const patch: Record<string, unknown> = { ...changes, updated_at: this.db.fn.now() };
    if (changes.deleted !== undefined) patch.deleted_at = changes.deleted ? this.db.fn.now() : null;
    const [row] = await this.db('projects').where({ id }).update(patch).returning('*');
    this.liveness.changed(this.db, id);
    return row;
  }
}
