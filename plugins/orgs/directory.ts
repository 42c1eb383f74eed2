import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { OrgDirectory, OrgEntry } from '../../core/ports/directory.ts';

const ENTRY = ['id', 'name', 'slug', 'deleted', 'created_at'] as const;

/** The orgs domain's answer to other domains (core/ports/directory.ts). */
@injectable()
export class Orgs implements OrgDirectory {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  byId(id: string, db: Db = this.db): Promise<OrgEntry | undefined> {
    return db('orgs').where({ id }).first(ENTRY);
  }

  byIds(ids: string[], db: Db = this.db): Promise<OrgEntry[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return db('orgs')
      .whereIn('id', [...new Set(ids)])
      .select(ENTRY);
  }

  /** The org with this id or slug (a manifest may name an org either way). */
  byRef(ref: string, db: Db = this.db): Promise<OrgEntry | undefined> {
    return db('orgs').where({ id: ref }).orWhere({ slug: ref }).first(ENTRY);
  }

  deletedIds(db: Db = this.db): Promise<string[]> {
    return db('orgs').where({ deleted: true }).pluck('id');
  }
}
