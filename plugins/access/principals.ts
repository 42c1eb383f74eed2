import Boom from '@hapi/boom';
import type { Db } from '../../core/db/knex.ts';
import type { Permission } from '../../core/auth/permissions.ts';
import type { Grant } from '../../core/auth/principal.ts';
import type { ActorType } from '../../core/auth/resolver.ts';

/** The principal exists and belongs to the org (users: exist at all; service accounts and groups: of this org), else 404. */
export async function requirePrincipal(db: Db, orgId: string, type: ActorType, id: string): Promise<void> {
  const found =
    type === 'user'
      ? await db('users').where({ id }).first('id')
      : await db(type === 'group' ? 'access_groups' : 'service_accounts').where({ id, org_id: orgId }).first('id');
  if (!found) throw Boom.notFound(`${type.replace('_', ' ')} ${id} not found in org ${orgId}`);
}

/** Nobody hands out what they do not hold themselves (403 naming the missing permissions). */
export function requireGrantable(grant: Grant, permissions: Iterable<Permission>): void {
  const missing = [...permissions].filter((p) => !grant.permissions.has(p));
  if (missing.length) throw Boom.forbidden(`cannot grant permissions you do not hold: ${missing.join(', ')}`, { missing });
}

export async function requireProjectInOrg(db: Db, orgId: string, projectId: string): Promise<void> {
  if (!(await db('projects').where({ id: projectId, org_id: orgId }).first('id'))) throw Boom.notFound(`project ${projectId} not found in org ${orgId}`);
}
