import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Permission } from '../../core/auth/permissions.ts';
import type { Grant } from '../../core/auth/principal.ts';
import type { ActorType } from '../../core/auth/resolver.ts';
import { ProjectDirectoryToken, UserDirectoryToken, type ProjectDirectory, type UserDirectory } from '../../core/ports/directory.ts';

/** Whether what a request names exists in the org: principals (users through the auth domain) and projects. */
@injectable()
export class OrgPrincipals {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(UserDirectoryToken) private readonly users: UserDirectory,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
  ) {}

  /** The principal exists and belongs to the org (users: exist at all; service accounts and groups: of this org), else 404. */
  async require(orgId: string, type: ActorType, id: string): Promise<void> {
    const found =
      type === 'user'
        ? await this.users.findById(id)
        : await this.db(type === 'group' ? 'access_groups' : 'service_accounts')
            .where({ id, org_id: orgId })
            .first('id');
    if (!found) throw Boom.notFound(`${type.replace('_', ' ')} ${id} not found in org ${orgId}`);
  }

  async requireProject(orgId: string, projectId: string): Promise<void> {
    if ((await this.projects.byId(projectId))?.org_id !== orgId) throw Boom.notFound(`project ${projectId} not found in org ${orgId}`);
  }

  /** Whether the user is the system administrator. */
  async isSystemAdmin(userId: string): Promise<boolean> {
    return (await this.users.findById(userId))?.is_admin === true;
  }
}

/** Nobody hands out what they do not hold themselves (403 naming the missing permissions). */
export function requireGrantable(grant: Grant, permissions: Iterable<Permission>): void {
  const missing = [...permissions].filter((p) => !grant.permissions.has(p));
  if (missing.length) throw Boom.forbidden(`cannot grant permissions you do not hold: ${missing.join(', ')}`, { missing });
}
