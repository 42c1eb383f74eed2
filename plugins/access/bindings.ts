import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';
import { isUniqueViolation } from '../../core/http/unique.ts';
import { isRoleName, ROLE_PERMISSIONS } from '../../core/auth/permissions.ts';
import type { Grant } from '../../core/auth/principal.ts';
import type { ActorType } from '../../core/auth/resolver.ts';
import { AccessRoles } from './roles.ts';
import { OrgPrincipals, requireGrantable } from './principals.ts';
import { AuthCache } from '../../core/auth/cache.ts';

export interface BindingRow {
  id: string;
  org_id: string;
  role: string;
  principal_type: ActorType;
  principal_id: string;
  project_id: string | null;
  created_at: Date;
}

export type BindingInput = Pick<BindingRow, 'role' | 'principal_type' | 'principal_id'> & { project_id?: string | null };
export type BindingFilters = ListQuery & { principal_type?: string; principal_id?: string; project_id?: string };

/** A role given to a user, service account or group: org-wide, or for one project. */
@injectable()
export class AccessBindings {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(AccessRoles) private readonly roles: AccessRoles,
    @inject(OrgPrincipals) private readonly principals: OrgPrincipals,
    @inject(AuthCache) private readonly cache: AuthCache,
  ) {}

  list(orgId: string, f: BindingFilters) {
    const q = this.db('access_bindings').where({ org_id: orgId });
    if (f.principal_type) q.where({ principal_type: f.principal_type });
    if (f.principal_id) q.where({ principal_id: f.principal_id });
    if (f.project_id) q.where({ project_id: f.project_id });
    return paginate<BindingRow, BindingRow>(q, f, toBinding, 'access_bindings');
  }

  async get(orgId: string, id: string): Promise<BindingRow> {
    const row = await this.db('access_bindings').where({ org_id: orgId, id }).first();
    if (!row) throw Boom.notFound(`binding ${id} not found`);
    return toBinding(row);
  }

  /** The caller must hold every permission the role gives; a custom role's scope decides whether a project is named. */
  async create(grant: Grant, orgId: string, input: BindingInput, createdBy: string): Promise<BindingRow> {
    const projectId = input.project_id ?? null;
    if (isRoleName(input.role)) {
      requireGrantable(grant, ROLE_PERMISSIONS[input.role]);
    } else {
      const role = await this.roles.get(orgId, input.role).catch(() => {
        throw Boom.badData(`role ${input.role} is not a role of org ${orgId}`);
      });
      if (role.scope === 'project' && !projectId) throw Boom.badData(`role ${role.name} has scope project: give project_id`);
      if (role.scope === 'org' && projectId) throw Boom.badData(`role ${role.name} has scope org: it binds org-wide, without project_id`);
      requireGrantable(grant, role.permissions);
    }
    await this.principals.require(orgId, input.principal_type, input.principal_id);
    if (projectId) await this.principals.requireProject(orgId, projectId);
    try {
      const [row] = await this.db('access_bindings')
        .insert({
          id: newId('bnd'),
          org_id: orgId,
          role: input.role,
          principal_type: input.principal_type,
          principal_id: input.principal_id,
          project_id: projectId,
          created_by: createdBy,
        })
        .returning('*');
      this.cache.changed(this.db);
      return toBinding(row);
    } catch (e) {
      if (isUniqueViolation(e))
        throw Boom.conflict(
          `${input.principal_type.replace('_', ' ')} ${input.principal_id} already has role ${input.role} ${projectId ? `on project ${projectId}` : 'org-wide'}`,
        );
      throw e;
    }
  }

  async remove(orgId: string, id: string): Promise<void> {
    if (!(await this.db('access_bindings').where({ org_id: orgId, id }).delete())) throw Boom.notFound(`binding ${id} not found`);
    this.cache.changed(this.db);
  }
}

function toBinding(r: BindingRow & { created_by?: unknown }): BindingRow {
  const { created_by: _c, ...binding } = r;
  return binding;
}
