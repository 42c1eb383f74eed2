import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Access, type TargetPointer } from '../../core/auth/access.ts';
import type { Permission } from '../../core/auth/permissions.ts';
import type { Principal } from '../../core/auth/principal.ts';

/** Where a caller acts: an org (and maybe one of its projects), or nowhere in particular (system entries only). */
export interface CallerScope {
  orgId: string | null;
  projectId: string | null;
}

export interface ScopeHint {
  orgId?: string | null;
  projectId?: string | null;
}

/**
 * The org or project a request is about, from what it names (query, body or header) or else from
 * the token: a job token's project, a scoped token's org or project. Checked with the one Access
 * decision, so an org the caller cannot see is 404 and a missing permission 403.
 */
@injectable()
export class Scopes {
  constructor(@inject(Access) private readonly access: Access) {}

  pointer(principal: Principal, hint: ScopeHint): TargetPointer | null {
    if (hint.projectId) return { project: hint.projectId };
    if (hint.orgId) {
      // A job token reaches only its own project; naming its own org means that project.
      if (principal.job) return principal.job.orgId === hint.orgId ? { project: principal.job.projectId } : { org: hint.orgId };
      if (principal.scope?.type === 'project') return { project: principal.scope.id };
      return { org: hint.orgId };
    }
    if (principal.job) return { project: principal.job.projectId };
    if (principal.scope) return principal.scope.type === 'project' ? { project: principal.scope.id } : { org: principal.scope.id };
    return null;
  }

  /** The caller's scope with `permission` on it; without any hint or token scope, the system scope alone (no org). */
  async of(principal: Principal, hint: ScopeHint, permission: Permission): Promise<CallerScope> {
    const pointer = this.pointer(principal, hint);
    if (!pointer) return { orgId: null, projectId: null };
    const grant = await this.access.authorize(principal, permission, pointer);
    if (hint.orgId && grant.orgId !== hint.orgId) throw Boom.notFound(`org ${hint.orgId} not found`);
    return { orgId: grant.orgId, projectId: grant.projectId };
  }

  /** Keeps, of a query with an `org_id` column, the rows of orgs the caller can see (inference:use is checked by `mayUse`). */
  visibleOrgs(principal: Principal, query: Parameters<Access['visibleOrgs']>[1], orgIdColumn: string) {
    return this.access.visibleOrgs(principal, query, orgIdColumn);
  }

  /** Whether the caller may send calls to the gateway in that org. */
  async mayUse(principal: Principal, orgId: string): Promise<boolean> {
    const grant = await this.access.grantOn(principal, { org: orgId });
    return grant?.permissions.has('inference:use') ?? false;
  }

  /** Administering an org's entries needs `inference:admin` there; the system's need the system administrator. */
  async admin(principal: Principal, orgId: string | null): Promise<void> {
    if (orgId === null) {
      if (!principal.isAdmin) throw Boom.forbidden('system inference targets and models need the system administrator; name an org_id for your org');
      return;
    }
    await this.access.authorize(principal, 'inference:admin', { org: orgId });
  }

  /** Whether the caller may administer that scope (false hides an entry as 404). */
  async mayAdmin(principal: Principal, orgId: string | null): Promise<boolean> {
    if (orgId === null) return principal.isAdmin;
    const grant = await this.access.grantOn(principal, { org: orgId });
    return grant?.permissions.has('inference:admin') ?? false;
  }
}
