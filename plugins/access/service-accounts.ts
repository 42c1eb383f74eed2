import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';
import { conflictingFields, isUniqueViolation } from '../../core/http/unique.ts';
import { Conflict } from '../../core/errors.ts';
import type { Permission } from '../../core/auth/permissions.ts';
import type { Grant } from '../../core/auth/principal.ts';
import { MachineTokens } from '../../core/auth/machine-tokens.ts';
import { PermissionResolver } from '../../core/auth/resolver.ts';
import { AccessBindings } from './bindings.ts';
import { OrgPrincipals, requireGrantable } from './principals.ts';
import { AuthCache } from '../../core/auth/cache.ts';

const DAY_MS = 86_400_000;

export interface ServiceAccountRow {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

interface TokenRow {
  id: string;
  service_account_id: string;
  name: string | null;
  scope_type: 'org' | 'project';
  scope_id: string;
  permissions: Permission[];
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
}

export interface ServiceAccountInput {
  name: string;
  description?: string | null;
  role?: string;
  project_id?: string | null;
}

export interface MintInput {
  name?: string;
  scope?: { type: 'org' | 'project'; id: string };
  permissions: Permission[];
  ttl_days: number;
}

const toAccount = ({ created_by: _c, ...a }: ServiceAccountRow & { created_by?: unknown }) => a;
const toToken = (t: TokenRow & { created_by?: unknown }) => ({
  id: t.id,
  service_account_id: t.service_account_id,
  name: t.name,
  scope: { type: t.scope_type, id: t.scope_id },
  permissions: t.permissions,
  created_at: t.created_at,
  expires_at: t.expires_at,
  revoked_at: t.revoked_at,
});

/**
 * Service accounts: org principals for bots. Their permissions come from bindings; each token adds
 * a scope and an explicit permission list that it never exceeds, and is revocable at once.
 */
@injectable()
export class ServiceAccounts {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(MachineTokens) private readonly machineTokens: MachineTokens,
    @inject(PermissionResolver) private readonly resolver: PermissionResolver,
    @inject(AccessBindings) private readonly bindings: AccessBindings,
    @inject(OrgPrincipals) private readonly principals: OrgPrincipals,
    @inject(AuthCache) private readonly cache: AuthCache,
  ) {}

  list(orgId: string, q: ListQuery) {
    return paginate(this.db('service_accounts').where({ org_id: orgId }), q, toAccount, 'service_accounts');
  }

  async get(orgId: string, id: string): Promise<ServiceAccountRow> {
    const row = await this.db('service_accounts').where({ org_id: orgId, id }).first();
    if (!row) throw Boom.notFound(`service account ${id} not found`);
    return toAccount(row);
  }

  /** With `role`, the account is bound that role at once (org-wide, or on `project_id`); if the binding is refused, nothing is kept. */
  async create(grant: Grant, orgId: string, input: ServiceAccountInput, createdBy: string): Promise<ServiceAccountRow> {
    let account: ServiceAccountRow;
    try {
      const [row] = await this.db('service_accounts')
        .insert({ id: newId('sa'), org_id: orgId, name: input.name, description: input.description ?? null, created_by: createdBy })
        .returning('*');
      account = toAccount(row);
    } catch (e) {
      if (isUniqueViolation(e)) throw Boom.conflict(`a service account named ${input.name} already exists in org ${orgId}`);
      throw e;
    }
    if (input.role) {
      try {
        await this.bindings.create(
          grant,
          orgId,
          { role: input.role, principal_type: 'service_account', principal_id: account.id, project_id: input.project_id },
          createdBy,
        );
      } catch (e) {
        await this.db('service_accounts').where({ id: account.id }).delete();
        throw e;
      }
    }
    return account;
  }

  /**
   * Find or create by name: the account as it is when `description` (if given) matches and the
   * `role` (if given) is bound to it there (org-wide, or on `project_id`); else 409 naming the fields.
   */
  async ensure(grant: Grant, orgId: string, input: ServiceAccountInput, createdBy: string): Promise<{ account: ServiceAccountRow; created: boolean }> {
    let found: ServiceAccountRow | undefined = await this.db('service_accounts').where({ org_id: orgId, name: input.name }).first();
    if (!found) {
      try {
        return { account: await this.create(grant, orgId, input, createdBy), created: true };
      } catch (e) {
        // Another ensure created it meanwhile: compare with that one.
        found = await this.db('service_accounts').where({ org_id: orgId, name: input.name }).first();
        if (!found) throw e;
      }
    }
    const differing = conflictingFields({ description: input.description }, found as unknown as Record<string, unknown>);
    if (input.role) {
      const bound = await this.db('access_bindings')
        .where({ org_id: orgId, role: input.role, principal_type: 'service_account', principal_id: found.id, project_id: input.project_id ?? null })
        .first('id');
      if (!bound) differing.push(...(input.project_id ? ['role', 'project_id'] : ['role']));
    }
    if (differing.length) throw new Conflict(`service account ${input.name} exists in org ${orgId} with other ${differing.join(', ')}`, { fields: differing });
    return { account: toAccount(found), created: false };
  }

  async update(orgId: string, id: string, changes: { description?: string | null }): Promise<ServiceAccountRow> {
    await this.get(orgId, id);
    const [row] = await this.db('service_accounts')
      .where({ id })
      .update({ ...changes, updated_at: this.db.fn.now() })
      .returning('*');
    return toAccount(row);
  }

  /** Its tokens stop at once (their rows go), and so do its bindings and group memberships. */
  async remove(orgId: string, id: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      if (!(await trx('service_accounts').where({ org_id: orgId, id }).delete())) throw Boom.notFound(`service account ${id} not found`);
      await trx('access_bindings').where({ org_id: orgId, principal_type: 'service_account', principal_id: id }).delete();
      await trx('access_group_members').where({ principal_type: 'service_account', principal_id: id }).delete();
      this.cache.changed(trx);
    });
  }

  /** The minter must hold the listed permissions; the token value is in this answer only. */
  async mint(grant: Grant, orgId: string, id: string, input: MintInput, createdBy: string) {
    await this.get(orgId, id);
    const scope = input.scope ?? { type: 'org' as const, id: orgId };
    if (scope.type === 'org' && scope.id !== orgId) throw Boom.badData(`a token of a service account of org ${orgId} cannot be scoped to org ${scope.id}`);
    if (scope.type === 'project') await this.principals.requireProject(orgId, scope.id);
    requireGrantable(grant, input.permissions);
    const held = await this.resolver.resolve({ type: 'service_account', id }, scope.type === 'org' ? { org: scope.id } : { project: scope.id });
    const lacking = input.permissions.filter((p) => !held?.permissions.has(p));
    if (lacking.length)
      throw Boom.badData(`service account ${id} does not hold ${lacking.join(', ')} on ${scope.type} ${scope.id}: bind it a role that does first`);
    const [row] = await this.db('service_account_tokens')
      .insert({
        id: newId('sat'),
        service_account_id: id,
        name: input.name ?? null,
        scope_type: scope.type,
        scope_id: scope.id,
        permissions: input.permissions,
        created_by: createdBy,
        expires_at: new Date(Date.now() + input.ttl_days * DAY_MS),
      })
      .returning('*');
    return { ...toToken(row), token: await this.machineTokens.signServiceToken(row) };
  }

  async tokens(orgId: string, id: string, q: ListQuery) {
    await this.get(orgId, id);
    return paginate(this.db('service_account_tokens').where({ service_account_id: id }), q, toToken, 'service_account_tokens');
  }

  /** Revoking twice is the same as once. */
  async revoke(orgId: string, id: string, tokenId: string): Promise<void> {
    await this.get(orgId, id);
    const found = await this.db('service_account_tokens').where({ id: tokenId, service_account_id: id }).first('id', 'revoked_at');
    if (!found) throw Boom.notFound(`token ${tokenId} not found`);
    if (!found.revoked_at) await this.db('service_account_tokens').where({ id: tokenId }).update({ revoked_at: this.db.fn.now() });
    this.cache.changed(this.db);
  }
}
