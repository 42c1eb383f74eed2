import Boom from '@hapi/boom';
import type { Knex } from 'knex';
import { inject, injectable } from '../di.ts';
import { Tokens } from '../tokens.ts';
import type { Db } from '../db/knex.ts';
import { PERMISSIONS, ROLE_PERMISSIONS, weakerRole, type Permission } from './permissions.ts';
import type { Grant, Principal } from './principal.ts';
import { PermissionResolver, type Actor, type Resolution } from './resolver.ts';

/** What a route acts on: an org or a project, by id, and for job routes the job. */
export type TargetPointer = ({ org: string } | { project: string }) & { job?: string };

const ALL_PERMISSIONS: ReadonlySet<Permission> = new Set(Object.keys(PERMISSIONS) as Permission[]);

const intersect = (a: ReadonlySet<Permission>, b: ReadonlySet<Permission>): Set<Permission> => new Set([...a].filter((p) => b.has(p)));

/**
 * The one authorization decision: does this principal hold `permission` on this org or project?
 * A target the caller cannot see (or that does not exist) is 404, never 403, so existence is not
 * revealed; a visible target without the permission is 403 naming it.
 */
@injectable()
export class Access {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(PermissionResolver) private readonly resolver: PermissionResolver,
  ) {}

  async authorize(principal: Principal, permission: Permission, target: TargetPointer): Promise<Grant> {
    const grant = await this.grantOn(principal, target);
    if (!grant) throw notFound(target);
    if (!grant.permissions.has(permission)) throw Boom.forbidden(`missing permission ${permission}`, { permission });
    return grant;
  }

  /** What the caller may do on the target, or null when it is not visible to them. */
  async grantOn(principal: Principal, target: TargetPointer): Promise<Grant | null> {
    if (principal.job) return this.jobGrant(principal, target);
    const actor: Actor = { type: principal.kind === 'service_account' ? 'service_account' : 'user', id: principal.id };
    const resolved = await this.resolver.resolve(actor, target);
    if (!resolved || !inScope(principal, resolved)) return null;
    if (principal.isAdmin) return { orgId: resolved.orgId, projectId: resolved.projectId, role: 'owner', permissions: ALL_PERMISSIONS };
    if (resolved.sources.length === 0) return null;
    let { role, permissions } = resolved;
    if (principal.roleCap) {
      role = role && weakerRole(role, principal.roleCap);
      permissions = intersect(permissions, ROLE_PERMISSIONS[principal.roleCap]);
    }
    if (principal.permissions) permissions = intersect(permissions, principal.permissions);
    return { orgId: resolved.orgId, projectId: resolved.projectId, role, permissions };
  }

  /** A job token reaches its own project, and of job routes only its own job's, with its listed permissions. */
  private jobGrant(principal: Principal, target: TargetPointer): Grant | null {
    const job = principal.job!;
    if (!('project' in target) || target.project !== job.projectId) return null;
    if (target.job !== undefined && target.job !== job.id) return null;
    return { orgId: job.orgId, projectId: job.projectId, role: null, permissions: principal.permissions ?? new Set() };
  }

  /** Narrows an `orgs` query to those the principal can see. */
  visibleOrgs(principal: Principal, query: Knex.QueryBuilder, orgIdColumn = 'orgs.id'): Knex.QueryBuilder {
    if (principal.scope) return query.where(orgIdColumn, principal.scope.type === 'org' ? principal.scope.id : null);
    if (principal.isAdmin) return query;
    if (principal.kind !== 'user') return query.whereRaw('false');
    return query.where((w) =>
      w
        .whereExists((q) => q.select(this.db.raw('1')).from('org_members as vm').whereRaw('vm.org_id = ??', [orgIdColumn]).andWhere('vm.user_id', principal.id))
        .orWhereExists((q) => this.bindingsOf(q, principal.id).whereRaw('vb.org_id = ??', [orgIdColumn]).whereNull('vb.project_id')),
    );
  }

  /** Narrows a `projects` query: org members see the org's projects, project members their project; bindings likewise. */
  visibleProjects(principal: Principal, query: Knex.QueryBuilder): Knex.QueryBuilder {
    if (principal.scope?.type === 'project') return query.where('projects.id', principal.scope.id);
    if (principal.scope?.type === 'org') return query.where('projects.org_id', principal.scope.id);
    if (principal.isAdmin) return query;
    if (principal.kind !== 'user') return query.whereRaw('false');
    return query.where((w) =>
      w
        .whereExists((q) => q.select(this.db.raw('1')).from('org_members as vm').whereRaw('vm.org_id = projects.org_id').andWhere('vm.user_id', principal.id))
        .orWhereExists((q) =>
          q.select(this.db.raw('1')).from('project_members as vp').whereRaw('vp.project_id = projects.id').andWhere('vp.user_id', principal.id),
        )
        .orWhereExists((q) =>
          this.bindingsOf(q, principal.id)
            .whereRaw('vb.org_id = projects.org_id')
            .where((b) => b.whereNull('vb.project_id').orWhereRaw('vb.project_id = projects.id')),
        ),
    );
  }

  /** Bindings that apply to a user: on the user, or on a group the user is in. */
  private bindingsOf(q: Knex.QueryBuilder, userId: string): Knex.QueryBuilder {
    return q
      .select(this.db.raw('1'))
      .from('access_bindings as vb')
      .where((w) =>
        w
          .where({ 'vb.principal_type': 'user', 'vb.principal_id': userId })
          .orWhere((g) =>
            g
              .where('vb.principal_type', 'group')
              .whereIn('vb.principal_id', this.db('access_group_members').where({ principal_type: 'user', principal_id: userId }).select('group_id')),
          ),
      );
  }
}

/** A token scoped to an org or project sees nothing outside it. */
function inScope(principal: Principal, resolved: Resolution): boolean {
  if (!principal.scope) return true;
  return principal.scope.type === 'org' ? resolved.orgId === principal.scope.id : resolved.projectId === principal.scope.id;
}

export function notFound(target: TargetPointer): Boom.Boom {
  return 'project' in target ? Boom.notFound(`project ${target.project} not found`) : Boom.notFound(`org ${target.org} not found`);
}
