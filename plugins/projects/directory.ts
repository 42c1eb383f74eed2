import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { Access } from '../../core/auth/access.ts';
import type { Principal } from '../../core/auth/principal.ts';
import type { ProjectDirectory, ProjectEntry } from '../../core/ports/directory.ts';
import { Batcher } from '../../core/batcher.ts';
import { SharedMemos, type SharedMemo } from '../../core/db/shared-memos.ts';
import { projectsMemo } from './repository.ts';

const ENTRY = ['id', 'org_id', 'name', 'slug', 'branch', 'repo_url', 'deleted', 'created_at'] as const;

/** The projects domain's answer to other domains (core/ports/directory.ts). */
@injectable()
export class Projects implements ProjectDirectory {
  /** Entries read outside transactions, remembered per process until the project changes. */
  private readonly known: SharedMemo<ProjectEntry>;
  /** Projects not remembered yet, read together when asked for at the same moment. */
  private readonly unknown = new Batcher<string, ProjectEntry | undefined>(async (ids) => {
    const byId = new Map((await this.byIds(ids)).map((r) => [r.id, r]));
    return ids.map((id) => byId.get(id));
  });

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Access) private readonly access: Access,
    @inject(SharedMemos) memos: SharedMemos,
  ) {
    this.known = projectsMemo(memos);
  }

  /** Inside a transaction the row as that transaction sees it; else the remembered entry (a copy: it is shared). */
  async byId(id: string, db: Db = this.db): Promise<ProjectEntry | undefined> {
    if (db !== this.db) return db('projects').where({ id }).first(ENTRY);
    const entry = await this.known.get(id, () => this.unknown.submit(id));
    return entry && { ...entry };
  }

  byIds(ids: string[], db: Db = this.db): Promise<ProjectEntry[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return db('projects')
      .whereIn('id', [...new Set(ids)])
      .select(ENTRY);
  }

  async liveSlugs(ids: string[]): Promise<Map<string, string>> {
    const known = await Promise.all([...new Set(ids)].map((id) => this.known.get(id, () => this.unknown.submit(id))));
    return new Map(known.flatMap((p) => (p && !p.deleted ? [[p.id, p.slug] as const] : [])));
  }

  idsInOrg(orgId: string, db: Db = this.db): Promise<string[]> {
    return db('projects').where({ org_id: orgId }).orderBy('created_at').pluck('id');
  }

  liveIdsInOrg(orgId: string, db: Db = this.db): Promise<string[]> {
    return db('projects').where({ org_id: orgId, deleted: false }).orderBy('created_at').pluck('id');
  }

  async visibleTo(principal: Principal, projectId: string): Promise<boolean> {
    return (await this.access.grantOn(principal, { project: projectId })) !== null;
  }
}
