import Boom from '@hapi/boom';
import type { Knex } from 'knex';
import { inject, injectable } from '../di.ts';
import { Tokens } from '../tokens.ts';
import type { Db } from '../db/knex.ts';
import { Batcher } from '../batcher.ts';
import { ROLE_PERMISSIONS, strongerRole, weakerRole, type Permission, type RoleName } from './permissions.ts';
import type { Grant, Principal } from './principal.ts';

/** What a route acts on: an org or a project, by id. */
export type TargetPointer = { org: string } | { project: string };

/**
 * The one authorization decision: does this principal hold `permission` on this org or project?
 * A target the caller cannot see (or that does not exist) is 404, never 403, so existence is not
 * revealed; a visible target without the permission is 403 naming it.
 */
@injectable()
export class Access {
  private readonly memberships = new Batcher<TargetKey, MembershipRow | undefined>((keys) => this.membershipRows(keys));

  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  async authorize(principal: Principal, permission: Permission, target: TargetPointer): Promise<Grant> {
    const grant = await this.grantOn(principal, target);
    if (!grant) throw notFound(target);
    if (!ROLE_PERMISSIONS[grant.role].has(permission)) {
      throw Boom.forbidden(`missing permission ${permission}`, { permission });
    }
    return grant;
  }

  /** The caller's effective role on the target, or null when it is not visible to them. */
  async grantOn(principal: Principal, target: TargetPointer): Promise<Grant | null> {
    const row = await this.memberships.submit(
      'project' in target ? { userId: principal.id, orgId: null, projectId: target.project } : { userId: principal.id, orgId: target.org, projectId: null },
    );
    if (!row) return null;
    const projectId = 'project' in target ? target.project : null;
    if (principal.scope) {
      const inScope = principal.scope.type === 'org' ? row.org_id === principal.scope.id : projectId === principal.scope.id;
      if (!inScope) return null;
    }
    let role: RoleName | null = principal.isAdmin ? 'owner' : strongerRole(row.org_role, row.project_role);
    if (!role) return null;
    if (principal.roleCap) role = weakerRole(role, principal.roleCap);
    return { orgId: row.org_id, projectId, role };
  }

  /** Narrows an `orgs` query to those the principal can see. */
  visibleOrgs(principal: Principal, query: Knex.QueryBuilder, orgIdColumn = 'orgs.id'): Knex.QueryBuilder {
    if (principal.scope) return query.where(orgIdColumn, principal.scope.type === 'org' ? principal.scope.id : null);
    if (principal.isAdmin) return query;
    return query.whereExists((q) =>
      q.select(this.db.raw('1')).from('org_members as vm').whereRaw('vm.org_id = ??', [orgIdColumn]).andWhere('vm.user_id', principal.id),
    );
  }

  /** Narrows a `projects` query: org members see the org's projects, project members their project. */
  visibleProjects(principal: Principal, query: Knex.QueryBuilder): Knex.QueryBuilder {
    if (principal.scope?.type === 'project') return query.where('projects.id', principal.scope.id);
    if (principal.scope?.type === 'org') return query.where('projects.org_id', principal.scope.id);
    if (principal.isAdmin) return query;
    return query.where((w) =>
      w
        .whereExists((q) => q.select(this.db.raw('1')).from('org_members as vm').whereRaw('vm.org_id = projects.org_id').andWhere('vm.user_id', principal.id))
        .orWhereExists((q) =>
          q.select(this.db.raw('1')).from('project_members as vp').whereRaw('vp.project_id = projects.id').andWhere('vp.user_id', principal.id),
        ),
    );
  }

  /**
   * The membership rows for many (user, target) pairs in one statement: concurrent requests share
   * a round trip. A row per pair whose org or project exists.
   */
  private async membershipRows(keys: TargetKey[]): Promise<(MembershipRow | undefined)[]> {
    const { rows } = await this.db.raw<{ rows: (MembershipRow & { i: string })[] }>(
      `SELECT k.i, coalesce(p.org_id, o.id) AS org_id, om.role AS org_role, pm.role AS project_role
       FROM unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS k(user_id, org_id, project_id, i)
       LEFT JOIN projects p ON p.id = k.project_id
       LEFT JOIN orgs o ON o.id = k.org_id
       LEFT JOIN org_members om ON om.org_id = coalesce(p.org_id, o.id) AND om.user_id = k.user_id
       LEFT JOIN project_members pm ON pm.project_id = p.id AND pm.user_id = k.user_id
       WHERE p.id IS NOT NULL OR o.id IS NOT NULL`,
      [keys.map((k) => k.userId), keys.map((k) => k.orgId) as string[], keys.map((k) => k.projectId) as string[]], // nulls bind as SQL NULL
    );
    const byIndex = new Map(rows.map((r) => [Number(r.i), r]));
    return keys.map((_, i) => byIndex.get(i + 1));
  }
}

interface TargetKey {
  userId: string;
  orgId: string | null;
  projectId: string | null;
}

interface MembershipRow {
  org_id: string;
  org_role: RoleName | null;
  project_role: RoleName | null;
}

export function notFound(target: TargetPointer): Boom.Boom {
  return 'project' in target ? Boom.notFound(`project ${target.project} not found`) : Boom.notFound(`org ${target.org} not found`);
}
