import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';
import { isUniqueViolation } from '../../core/http/unique.ts';
import { OrgPrincipals } from './principals.ts';
import { AuthCache } from '../../core/auth/cache.ts';

export interface GroupRow {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface GroupMember {
  group_id: string;
  principal_type: 'user' | 'service_account';
  principal_id: string;
  created_at: Date;
}

/** Groups of users and service accounts: a binding to a group applies to each member. */
@injectable()
export class AccessGroups {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(OrgPrincipals) private readonly principals: OrgPrincipals,
    @inject(AuthCache) private readonly cache: AuthCache,
  ) {}

  list(orgId: string, q: ListQuery) {
    return paginate<GroupRow, GroupRow>(this.db('access_groups').where({ org_id: orgId }), q, (r) => r, 'access_groups');
  }

  async get(orgId: string, id: string): Promise<GroupRow> {
    const row = await this.db('access_groups').where({ org_id: orgId, id }).first();
    if (!row) throw Boom.notFound(`group ${id} not found`);
    return row;
  }

  async create(orgId: string, input: { name: string; description?: string | null }): Promise<GroupRow> {
    try {
      const [row] = await this.db('access_groups')
        .insert({ id: newId('grp'), org_id: orgId, name: input.name, description: input.description ?? null })
        .returning('*');
      return row;
    } catch (e) {
      if (isUniqueViolation(e)) throw Boom.conflict(`a group named ${input.name} already exists in org ${orgId}`);
      throw e;
    }
  }

  /** The group goes with its memberships and the bindings made to it. */
  async remove(orgId: string, id: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      if (!(await trx('access_groups').where({ org_id: orgId, id }).delete())) throw Boom.notFound(`group ${id} not found`);
      await trx('access_bindings').where({ org_id: orgId, principal_type: 'group', principal_id: id }).delete();
      this.cache.changed(trx);
    });
  }

  async members(orgId: string, id: string, q: ListQuery) {
    await this.get(orgId, id);
    return paginate<GroupMember, GroupMember>(this.db('access_group_members').where({ group_id: id }), q, (r) => r, 'access_group_members', 'principal_id');
  }

  /** Adding someone already in the group answers their existing membership. */
  async addMember(orgId: string, id: string, member: Pick<GroupMember, 'principal_type' | 'principal_id'>): Promise<{ member: GroupMember; created: boolean }> {
    await this.get(orgId, id);
    await this.principals.require(orgId, member.principal_type, member.principal_id);
    const [created] = await this.db('access_group_members')
      .insert({ group_id: id, ...member })
      .onConflict(['group_id', 'principal_type', 'principal_id'])
      .ignore()
      .returning('*');
    this.cache.changed(this.db);
    if (created) return { member: created, created: true };
    return {
      member: await this.db('access_group_members')
        .where({ group_id: id, ...member })
        .first(),
      created: false,
    };
  }

  /** GroupMembership (core/ports/groups.ts): the group by name or id. */
  async hasUser(orgId: string, group: string, userId: string): Promise<boolean> {
    const row = await this.db('access_group_members as m')
      .join('access_groups as g', 'g.id', 'm.group_id')
      .where('g.org_id', orgId)
      .where((q) => q.where('g.id', group).orWhere('g.name', group))
      .where({ 'm.principal_type': 'user', 'm.principal_id': userId })
      .first('m.group_id');
    return Boolean(row);
  }

  async removeMember(orgId: string, id: string, type: string, principalId: string): Promise<void> {
    await this.get(orgId, id);
    if (!(await this.db('access_group_members').where({ group_id: id, principal_type: type, principal_id: principalId }).delete())) {
      throw Boom.notFound(`${type.replace('_', ' ')} ${principalId} is not in group ${id}`);
    }
    this.cache.changed(this.db);
  }
}
