import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import type { Permission } from '../../core/auth/permissions.ts';
import { PermissionResolver, type ActorType, type Source } from '../../core/auth/resolver.ts';
import { OrgPrincipals } from './principals.ts';

export interface CheckQuery {
  principal_type: ActorType;
  principal_id: string;
  permission?: Permission;
  project_id?: string;
  resource_type?: 'orgfs' | 'orgdocs' | 'envdb';
  resource?: string;
  action?: 'read' | 'write' | 'admin';
}

export interface Explanation {
  allowed: boolean;
  principal: { type: ActorType; id: string };
  target: { org_id: string; project_id: string | null; resource_type?: string; resource?: string; action?: string };
  /** Every permission the question needs (a resource action may need two). */
  required: Permission[];
  sources: (Source & { grants: Permission[] })[];
  reason: string;
}

/** What a resource action needs: read → `<type>:read`, write → `<type>:write`, admin → write plus access:admin. */
function required(q: CheckQuery): Permission[] {
  if (!q.resource_type) return [q.permission!];
  const base: Permission[] = [`${q.resource_type}:${q.action === 'read' ? 'read' : 'write'}` as Permission];
  if (q.action === 'admin') base.push('access:admin');
  if (q.permission && !base.includes(q.permission)) base.push(q.permission);
  return base;
}

/**
 * `access/can` and `access/explain`: the same PermissionResolver the routes use, asked about any
 * principal of the org. A system administrator holds everything (as on the routes).
 */
@injectable()
export class AccessCheck {
  constructor(
    @inject(OrgPrincipals) private readonly principals: OrgPrincipals,
    @inject(PermissionResolver) private readonly resolver: PermissionResolver,
  ) {}

  async explain(orgId: string, q: CheckQuery): Promise<Explanation> {
    await this.principals.require(orgId, q.principal_type, q.principal_id);
    if (q.project_id) await this.principals.requireProject(orgId, q.project_id);
    const resolved = await this.resolver.resolve({ type: q.principal_type, id: q.principal_id }, q.project_id ? { project: q.project_id } : { org: orgId });
    if (!resolved) throw Boom.notFound(`org ${orgId} not found`);
    const needs = required(q);
    const target = {
      org_id: orgId,
      project_id: q.project_id ?? null,
      ...(q.resource_type && { resource_type: q.resource_type, resource: q.resource, action: q.action }),
    };
    const principal = { type: q.principal_type, id: q.principal_id };
    const sources = resolved.sources.map(({ permissions, ...s }) => ({ ...s, grants: needs.filter((p) => permissions.includes(p)) }));
    if (q.principal_type === 'user' && (await this.principals.isSystemAdmin(q.principal_id))) {
      return {
        allowed: true,
        principal,
        target,
        required: needs,
        sources: [{ kind: 'system_admin', grants: needs }, ...sources],
        reason: 'the system administrator holds every permission',
      };
    }
    const missing = needs.filter((p) => !resolved.permissions.has(p));
    const where = q.project_id ? `project ${q.project_id}` : `org ${orgId}`;
    const reason =
      missing.length === 0
        ? `granted by ${sources
            .filter((s) => s.grants.length)
            .map(describe)
            .join('; ')}`
        : resolved.sources.length === 0
          ? `no membership, binding or group gives ${principal.type.replace('_', ' ')} ${principal.id} anything on ${where}`
          : `missing ${missing.join(', ')}: not given by ${sources.map(describe).join('; ')}`;
    return { allowed: missing.length === 0, principal, target, required: needs, sources, reason };
  }
}

function describe(s: Source): string {
  switch (s.kind) {
    case 'system_admin':
      return 'system administrator';
    case 'org_membership':
      return `org membership as ${s.role}`;
    case 'project_membership':
      return `project membership as ${s.role}`;
    case 'binding':
      return `binding ${s.binding_id} of role ${s.role_name}${s.project_id ? ` on project ${s.project_id}` : ' org-wide'}${s.via_group ? ` through group ${s.via_group}` : ''}`;
  }
}
