import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { drawUntilFree, newId } from '../../core/ids.ts';
import { Access } from '../../core/auth/access.ts';
import { Memberships } from '../../core/auth/memberships.ts';
import type { Grant, Principal } from '../../core/auth/principal.ts';
import { conflictingFields, isUniqueViolation } from '../../core/http/unique.ts';
import { orgSlugFrom, varyOrgSlug } from '../../core/slugs.ts';
import { OrgRepository, toOrg, type Org, type OrgRow } from './repository.ts';

export interface OrgInput {
  name: string;
  slug?: string;
  id?: string;
}

const SLUG_ATTEMPTS = 5;

@injectable()
export class OrgService {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(OrgRepository) private readonly orgs: OrgRepository,
    @inject(Memberships) private readonly memberships: Memberships,
    @inject(Access) private readonly access: Access,
  ) {}

  /** Creates the org with the caller as owner. A chosen slug must be free; a derived one is varied. */
  async create(principal: Principal, input: OrgInput): Promise<Org> {
    requireUnscoped(principal);
    let slug = input.slug ?? orgSlugFrom(input.name);
    return drawUntilFree({
      draws: input.slug === undefined ? SLUG_ATTEMPTS + 1 : 1,
      attempt: async (n) => {
        if (n > 0) slug = varyOrgSlug(input.name);
        return this.insertOwned(principal, { id: input.id ?? newId('org'), name: input.name, slug }).catch((e) => {
          throw isUniqueViolation(e, 'orgs_pkey') ? Boom.conflict(`org ${input.id} already exists`) : e;
        });
      },
      taken: (e) => isUniqueViolation(e, 'orgs_slug_unique'),
      exhausted: () => Boom.conflict(`org slug '${slug}' is taken`),
    });
  }

  /**
   * Find-or-create by id, else by slug (given or derived from the name); 409 when it exists with
   * other parameters. A lost race against a concurrent ensure on the same key finds the winner on
   * the next lookup. With an id as the key, the slug may be held by another org: a given slug is
   * then a conflict, a derived one is varied as on create. Without an id, an org the caller sees
   * under the same name but another slug is a conflict too, not a second org of that name.
   */
  async ensure(principal: Principal, input: OrgInput): Promise<Org> {
    requireUnscoped(principal);
    let slug = input.slug ?? orgSlugFrom(input.name);
    return drawUntilFree({
      draws: SLUG_ATTEMPTS + 1,
      attempt: async () => {
        const found = input.id ? await this.orgs.byId(input.id) : await this.orgs.bySlug(slug);
        if (found) return this.compare(principal, input, found);
        const namesake = input.id ? undefined : await this.orgs.visibleNamed(principal, input.name);
        if (namesake?.slug === slug) return this.compare(principal, input, namesake); // a concurrent ensure just made it
        if (namesake)
          throw Boom.conflict(
            `org ${namesake.id} is already named '${input.name}', with slug '${namesake.slug}': ensure it by that slug, or choose another name`,
          );
        try {
          return await this.insertOwned(principal, { id: input.id ?? newId('org'), name: input.name, slug });
        } catch (e) {
          if (!isUniqueViolation(e)) throw e;
          // A lost race (found on the next lookup), or with an id as the key, a slug another org holds.
          if (input.id && isUniqueViolation(e, 'orgs_slug_unique')) {
            const holder = await this.orgs.bySlug(slug);
            if (holder && holder.id !== input.id) {
              if (input.slug !== undefined) throw Boom.conflict(`org slug '${slug}' is taken`);
              slug = varyOrgSlug(input.name);
            }
          }
          return null;
        }
      },
      exhausted: () => Boom.conflict(`org slug '${slug}' is taken`),
    });
  }

  private async compare(principal: Principal, input: OrgInput, found: OrgRow): Promise<Org> {
    if (!(await this.access.grantOn(principal, { org: found.id }))) {
      throw Boom.conflict(input.id ? `org ${input.id} already exists` : `an org with slug '${found.slug}' already exists`);
    }
    const differs = conflictingFields({ name: input.name, slug: input.slug, id: input.id }, found as unknown as Record<string, unknown>);
    if (found.deleted) differs.push('deleted');
    if (differs.length) throw Boom.conflict(`org ${found.id} exists with different ${differs.join(', ')}`);
    return toOrg(found);
  }

  async get(id: string): Promise<Org> {
    return toOrg((await this.orgs.byId(id))!);
  }

  async update(grant: Grant, changes: { name?: string; slug?: string; deleted?: boolean }): Promise<Org> {
    if (changes.deleted !== undefined && !grant.permissions.has('orgs:delete')) throw Boom.forbidden('missing permission orgs:delete');
    try {
      return toOrg(await this.orgs.update(grant.orgId, changes));
    } catch (e) {
      if (isUniqueViolation(e, 'orgs_slug_unique')) throw Boom.conflict(`org slug '${changes.slug}' is taken`);
      throw e;
    }
  }

  private insertOwned(principal: Principal, row: { id: string; name: string; slug: string }): Promise<Org> {
    return this.db.transaction(async (trx) => {
      const org = await this.orgs.insert(row, trx);
      await this.memberships.addOwner({ kind: 'org', id: org.id }, principal.id, trx);
      return toOrg(org);
    });
  }
}

/** A token limited to one org or project cannot create orgs. */
function requireUnscoped(principal: Principal): void {
  if (principal.scope) throw Boom.forbidden(`a token scoped to ${principal.scope.type} ${principal.scope.id} cannot create orgs`);
}
