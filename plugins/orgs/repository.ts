import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { Access } from '../../core/auth/access.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';

export interface OrgRow {
  id: string;
  name: string;
  slug: string;
  deleted: boolean;
  deleted_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const toOrg = (r: OrgRow) => ({ id: r.id, name: r.name, slug: r.slug, deleted: r.deleted, created_at: r.created_at, updated_at: r.updated_at });
export type Org = ReturnType<typeof toOrg>;

@injectable()
export class OrgRepository {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Access) private readonly access: Access,
  ) {}

  list(principal: Principal, query: ListQuery) {
    let q = this.access.visibleOrgs(principal, this.db('orgs'));
    if (!query.include_deleted) q = q.where('orgs.deleted', false);
    return paginate<OrgRow, Org>(q, query, toOrg, 'orgs');
  }

  byId(id: string, trx: Db = this.db): Promise<OrgRow | undefined> {
    return trx('orgs').where({ id }).first();
  }

  bySlug(slug: string, trx: Db = this.db): Promise<OrgRow | undefined> {
    return trx('orgs').where({ slug }).first();
  }

  /** A live org of this name that the principal can see (names are not unique across tenants, and others' stay invisible). */
  visibleNamed(principal: Principal, name: string): Promise<OrgRow | undefined> {
    return this.access.visibleOrgs(principal, this.db('orgs')).where({ 'orgs.name': name, 'orgs.deleted': false }).first('orgs.*');
  }

  async insert(row: Pick<OrgRow, 'id' | 'name' | 'slug'>, trx: Db): Promise<OrgRow> {
    const [created] = await trx('orgs').insert(row).returning('*');
    return created;
  }

  async update(id: string, changes: Partial<Pick<OrgRow, 'name' | 'slug' | 'deleted'>>): Promise<OrgRow> {
    const patch: Record<string, unknown> = { ...changes, updated_at: this.db.fn.now() };
    if (changes.deleted !== undefined) patch.deleted_at = changes.deleted ? this.db.fn.now() : null;
    const [row] = await this.db('orgs').where({ id }).update(patch).returning('*');
    return row;
  }
}
