import Boom from '@hapi/boom';
import Joi from 'joi';
import { inject, injectable } from '../di.ts';
import { Tokens } from '../tokens.ts';
import type { Db } from '../db/knex.ts';
import { UserDirectoryToken, type UserDirectory } from '../ports/directory.ts';
import { paginate, type ListQuery, type Page } from '../http/lists.ts';
import { roleSchema, timestamp, userId } from '../http/schemas.ts';
import { strongerRole, type RoleName } from './permissions.ts';
import { AuthCache } from './cache.ts';

/** Org and project memberships have one shape and one set of rules; only the table differs. */
export type MembershipScope = { kind: 'org'; id: string } | { kind: 'project'; id: string };

const TABLES = {
  org: { table: 'org_members', key: 'org_id' },
  project: { table: 'project_members', key: 'project_id' },
} as const;

interface MemberRow {
  user_id: string;
  email: string;
  display_name: string | null;
  role: RoleName;
  created_at: Date;
  updated_at: Date;
}

export const memberSchema = Joi.object({
  user_id: userId.required(),
  email: Joi.string().required(),
  display_name: Joi.string().allow(null).required(),
  role: roleSchema.required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('Member');

const toMember = (r: MemberRow) => ({
  user_id: r.user_id,
  email: r.email,
  display_name: r.display_name,
  role: r.role,
  created_at: r.created_at,
  updated_at: r.updated_at,
});
export type Member = ReturnType<typeof toMember>;

/**
 * Rules: only an owner grants, changes or removes the owner role; an org keeps at least one owner
 * (checked under a row lock on the org, so two concurrent removals cannot both pass).
 */
@injectable()
export class Memberships {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(UserDirectoryToken) private readonly users: UserDirectory,
    @inject(AuthCache) private readonly cache: AuthCache,
  ) {}

  list(scope: MembershipScope, page: Pick<ListQuery, 'limit' | 'offset'>): Promise<Page<Member>> {
    const { table, key } = TABLES[scope.kind];
    const query = this.db(table).join('users', 'users.id', `${table}.user_id`).where(`${table}.${key}`, scope.id).select('users.email', 'users.display_name');
    return paginate<MemberRow, Member>(query, page, toMember, table, 'user_id');
  }

  /** Adds by e-mail (creating the account if needed): 'created', 'unchanged', or 409 on another role. */
  async add(scope: MembershipScope, email: string, role: RoleName, actorRole: RoleName | null): Promise<{ member: Member; created: boolean }> {
    if (role === 'owner') requireOwner(actorRole, 'grant the owner role');
    const { table, key } = TABLES[scope.kind];
    return this.db.transaction(async (trx) => {
      const { user } = await this.users.ensure(email, null, trx);
      this.cache.changed(trx);
      const [inserted] = await trx(table)
        .insert({ [key]: scope.id, user_id: user.id, role })
        .onConflict([key, 'user_id'])
        .ignore()
        .returning('*');
      if (!inserted) {
        const existing = await trx(table)
          .where({ [key]: scope.id, user_id: user.id })
          .first();
        if (existing.role !== role) {
          throw Boom.conflict(`${email} is already a member with role ${existing.role}; change it with PATCH .../members/${user.id}`);
        }
      }
      return { member: (await this.get(scope, user.id, trx))!, created: Boolean(inserted) };
    });
  }

  async setRole(scope: MembershipScope, userId: string, role: RoleName, actorRole: RoleName | null): Promise<Member> {
    const { table, key } = TABLES[scope.kind];
    return this.db.transaction(async (trx) => {
      await this.lockScope(scope, trx);
      const current = await trx(table)
        .where({ [key]: scope.id, user_id: userId })
        .first();
      if (!current) throw Boom.notFound(`user ${userId} is not a member`);
      if (current.role === role) return (await this.get(scope, userId, trx))!;
      if (role === 'owner' || current.role === 'owner') requireOwner(actorRole, 'grant or revoke the owner role');
      if (current.role === 'owner') await this.keepAnOwner(scope, trx);
      this.cache.changed(trx);
      await trx(table)
        .where({ [key]: scope.id, user_id: userId })
        .update({ role, updated_at: trx.fn.now() });
      return (await this.get(scope, userId, trx))!;
    });
  }

  async remove(scope: MembershipScope, userId: string, actorRole: RoleName | null): Promise<void> {
    const { table, key } = TABLES[scope.kind];
    await this.db.transaction(async (trx) => {
      await this.lockScope(scope, trx);
      const current = await trx(table)
        .where({ [key]: scope.id, user_id: userId })
        .first();
      if (!current) throw Boom.notFound(`user ${userId} is not a member`);
      if (current.role === 'owner') {
        requireOwner(actorRole, 'remove an owner');
        await this.keepAnOwner(scope, trx);
      }
      this.cache.changed(trx);
      await trx(table)
        .where({ [key]: scope.id, user_id: userId })
        .delete();
    });
  }

  /** Called inside the creating transaction: the creator of an org (or project) owns it. */
  async addOwner(scope: MembershipScope, userId: string, trx: Db): Promise<void> {
    const { table, key } = TABLES[scope.kind];
    this.cache.changed(trx);
    await trx(table)
      .insert({ [key]: scope.id, user_id: userId, role: 'owner' })
      .onConflict([key, 'user_id'])
      .merge({ role: 'owner' });
  }

  /** Adds the member unless already one (an existing membership keeps its role). */
  async addIfMissing(scope: MembershipScope, userId: string, role: RoleName, trx: Db): Promise<void> {
    const { table, key } = TABLES[scope.kind];
    this.cache.changed(trx);
    await trx(table)
      .insert({ [key]: scope.id, user_id: userId, role })
      .onConflict([key, 'user_id'])
      .ignore();
  }

  /** Gives the user `role`, or keeps a stronger role they already hold; returns the role they end with. */
  async grantAtLeast(scope: MembershipScope, userId: string, role: RoleName, trx: Db): Promise<RoleName> {
    const { table, key } = TABLES[scope.kind];
    this.cache.changed(trx);
    const existing = await trx(table)
      .where({ [key]: scope.id, user_id: userId })
      .forUpdate()
      .first('role');
    if (!existing) {
      await trx(table).insert({ [key]: scope.id, user_id: userId, role });
      return role;
    }
    const effective = strongerRole(existing.role, role)!;
    if (effective !== existing.role)
      await trx(table)
        .where({ [key]: scope.id, user_id: userId })
        .update({ role: effective, updated_at: trx.fn.now() });
    return effective;
  }

  /** Every org and project the user is a member of, with the role. */
  async ofUser(userId: string): Promise<{ orgs: { id: string; role: RoleName }[]; projects: { id: string; role: RoleName }[] }> {
    const [orgs, projects] = await Promise.all([
      this.db('org_members').where({ user_id: userId }).select('org_id as id', 'role'),
      this.db('project_members').where({ user_id: userId }).select('project_id as id', 'role'),
    ]);
    return { orgs, projects };
  }

  private async get(scope: MembershipScope, userId: string, trx: Db): Promise<Member | null> {
    const { table, key } = TABLES[scope.kind];
    const row = await trx(table)
      .join('users', 'users.id', `${table}.user_id`)
      .where({ [`${table}.${key}`]: scope.id, user_id: userId })
      .first(`${table}.*`, 'users.email', 'users.display_name');
    return row ? toMember(row) : null;
  }

  private lockScope(scope: MembershipScope, trx: Db) {
    return trx(scope.kind === 'org' ? 'orgs' : 'projects')
      .where({ id: scope.id })
      .forUpdate()
      .first('id');
  }

  /** Only orgs must keep an owner; a project belongs to its org's owners anyway. */
  private async keepAnOwner(scope: MembershipScope, trx: Db): Promise<void> {
    if (scope.kind !== 'org') return;
    const owners = (await trx('org_members').where({ org_id: scope.id, role: 'owner' }).count({ n: '*' }).first()) as { n: number };
    if (Number(owners.n) <= 1) throw Boom.badData('the org must keep at least one owner');
  }
}

function requireOwner(actorRole: RoleName | null, what: string): void {
  if (actorRole !== 'owner') throw Boom.forbidden(`only an owner can ${what}`);
}
