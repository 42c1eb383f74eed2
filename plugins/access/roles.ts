import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';
import { isUniqueViolation } from '../../core/http/unique.ts';
import type { Permission } from '../../core/auth/permissions.ts';
import { AuthCache } from '../../core/auth/cache.ts';

export interface RoleRow {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  scope: 'org' | 'project';
  permissions: Permission[];
  created_at: Date;
  updated_at: Date;
}

export type RoleInput = Pick<RoleRow, 'name' | 'scope' | 'permissions'> & { description?: string | null };

/** Custom roles: a named permission list, bound org-wide (scope org) or to one project (scope project). */
@injectable()
export class AccessRoles {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(AuthCache) private readonly cache: AuthCache,
  ) {}

  list(orgId: string, q: ListQuery) {
    return paginate<RoleRow, RoleRow>(this.db('access_roles').where({ org_id: orgId }), q, (r) => r, 'access_roles');
  }

  async get(orgId: string, id: string): Promise<RoleRow> {
    const row = await this.db('access_roles').where({ org_id: orgId, id }).first();
    if (!row) throw Boom.notFound(`role ${id} not found`);
    return row;
  }

  async create(orgId: string, input: RoleInput): Promise<RoleRow> {
    try {
      const [row] = await this.db('access_roles')
        .insert({
          id: newId('role'),
          org_id: orgId,
          name: input.name,
          scope: input.scope,
          permissions: input.permissions,
          description: input.description ?? null,
        })
        .returning('*');
      return row;
    } catch (e) {
      if (isUniqueViolation(e)) throw Boom.conflict(`a role named ${input.name} already exists in org ${orgId}`);
      throw e;
    }
  }

  async update(orgId: string, id: string, changes: Partial<Pick<RoleRow, 'permissions' | 'description'>>): Promise<RoleRow> {
    await this.get(orgId, id);
    const [row] = await this.db('access_roles')
      .where({ org_id: orgId, id })
      .update({ ...changes, updated_at: this.db.fn.now() })
      .returning('*');
    this.cache.changed(this.db);
    return row;
  }

  /** A role still bound cannot go: remove its bindings first (409 says how many). */
  async remove(orgId: string, id: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      const role = await trx('access_roles').where({ org_id: orgId, id }).forUpdate().first('id');
      if (!role) throw Boom.notFound(`role ${id} not found`);
      const { n } = (await trx('access_bindings').where({ org_id: orgId, role: id }).count({ n: '*' }).first())!;
      if (Number(n) > 0) throw Boom.conflict(`role ${id} is used by ${n} binding(s); delete them first`);
      await trx('access_roles').where({ id }).delete();
      this.cache.changed(trx);
    });
  }
}
