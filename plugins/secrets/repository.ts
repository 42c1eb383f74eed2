import type { Knex } from 'knex';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { SharedMemos, type SharedMemo } from '../../core/db/shared-memos.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';
import type { SecretScope, SecretType } from './schemas.ts';
import { ownerColumn, type SecretOwner } from './sealing.ts';

export interface SecretRow {
  id: number;
  scope: SecretScope;
  project_id: string | null;
  org_id: string | null;
  user_id: string | null;
  name: string;
  type: SecretType;
  value_enc: string;
  /** System secrets only (false elsewhere): resolves into jobs of every org. */
  shared_with_jobs: boolean;
  created_at: Date;
  updated_at: Date;
}

/** What any endpoint shows of a secret: never the value. `shared_with_jobs` is a system secret's only. */
export const toSecret = (r: SecretRow) => ({
  name: r.name,
  type: r.type,
  scope: r.scope,
  ...(r.scope === 'system' ? { shared_with_jobs: r.shared_with_jobs } : {}),
  created_at: r.created_at,
  updated_at: r.updated_at,
});
export type Secret = ReturnType<typeof toSecret>;

export const ownerOf = (r: SecretRow): SecretOwner => ({ scope: r.scope, id: r.project_id ?? r.org_id ?? r.user_id });

@injectable()
export class SecretRepository {
  /**
   * What `find` read (sealed rows only: values are opened by the caller each time), remembered per
   * process, since every model call through the gateway and every attempt looks secrets up. Any write
   * to secrets forgets it all, here and, by notice, in the other processes.
   */
  private readonly found: SharedMemo<SecretRow[]>;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(SharedMemos) memos: SharedMemos,
  ) {
    this.found = memos.memo('secret-lookups', /^\s*(?:insert\s+into|update|delete\s+from)\s+"?secrets"?[\s(]/i);
  }

  /** Newest first; names are unique per owner, so they break ties. */
  list(owner: SecretOwner, query: Pick<ListQuery, 'limit' | 'offset'>) {
    return paginate<SecretRow, Secret>(this.owned(owner), query, toSecret, 'secrets', 'name');
  }

  byName(owner: SecretOwner, name: string): Promise<SecretRow | undefined> {
    return this.owned(owner).where('secrets.name', name).first();
  }

  async insert(owner: SecretOwner, fields: { name: string; type: SecretType; value_enc: string; shared_with_jobs?: boolean }): Promise<SecretRow> {
    const column = ownerColumn(owner.scope);
    const [row] = await this.db('secrets')
      .insert({ scope: owner.scope, ...(column ? { [column]: owner.id } : {}), ...fields })
      .returning('*');
    this.found.changedAll(this.db);
    return row;
  }

  async replace(
    owner: SecretOwner,
    name: string,
    fields: { type?: SecretType; value_enc?: string; shared_with_jobs?: boolean },
  ): Promise<SecretRow | undefined> {
    const [row] = await this.owned(owner)
      .where('secrets.name', name)
      .update({ ...fields, updated_at: this.db.fn.now() })
      .returning('*');
    this.found.changedAll(this.db);
    return row;
  }

  async remove(owner: SecretOwner, name: string): Promise<number> {
    const removed = await this.owned(owner).where('secrets.name', name).delete();
    this.found.changedAll(this.db);
    return removed;
  }

  /** Every row with one of `names` held by one of `owners`, in one statement. */
  async find(names: string[], owners: SecretOwner[]): Promise<SecretRow[]> {
    if (!names.length || !owners.length) return [];
    const key = encodeURIComponent(`${names.join(',')}|${owners.map((o) => `${o.scope}.${o.id ?? ''}`).join(',')}`);
    const rows = await this.found.get(key, () =>
      this.db('secrets')
        .whereIn('name', names)
        .andWhere((w) => {
          for (const owner of owners) w.orWhere((o) => this.whereOwner(o, owner));
        }),
    );
    return rows ?? [];
  }

  private owned(owner: SecretOwner) {
    return this.whereOwner(this.db('secrets'), owner);
  }

  private whereOwner(q: Knex.QueryBuilder, owner: SecretOwner): Knex.QueryBuilder {
    const column = ownerColumn(owner.scope);
    const scoped = q.where('secrets.scope', owner.scope);
    return column ? scoped.where(`secrets.${column}`, owner.id) : scoped;
  }
}
