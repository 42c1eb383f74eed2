import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { Users, toUser } from './users.ts';
import { TokenService } from '../../core/auth/tokens.ts';
import { UserKeys } from './keys.ts';
import { Memberships } from '../../core/auth/memberships.ts';
import { OrgDirectoryToken, ProjectDirectoryToken, type OrgDirectory, type ProjectDirectory } from '../../core/ports/directory.ts';
import { strongerRole, type RoleName } from '../../core/auth/permissions.ts';
import type { Principal } from '../../core/auth/principal.ts';

export interface MintRequest {
  email: string;
  org_id?: string;
  project_id?: string;
  role: RoleName;
  ttl_days?: number;
  display_name?: string;
  public_key?: string;
}

/** Admin minting and the caller's own view of who they are. */
@injectable()
export class Identity {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Users) private readonly users: Users,
    @inject(TokenService) private readonly tokens: TokenService,
    @inject(UserKeys) private readonly keys: UserKeys,
    @inject(Memberships) private readonly memberships: Memberships,
    @inject(OrgDirectoryToken) private readonly orgs: OrgDirectory,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
  ) {}

  /**
   * Creates the user and the membership when missing (an existing membership keeps its role),
   * and issues a token limited to that org or project whose role caps what the membership gives.
   * `public_key` registers the user's login key: how an administrator onboards someone who will then
   * log in by SSH signature (a scoped token cannot manage keys itself).
   */
  async mint(request: MintRequest) {
    const scope = request.org_id ? { type: 'org' as const, id: request.org_id } : { type: 'project' as const, id: request.project_id! };
    const user = await this.db.transaction(async (trx) => {
      const directory = scope.type === 'org' ? this.orgs : this.projects;
      if (!(await directory.byId(scope.id, trx))) throw Boom.notFound(`${scope.type} ${scope.id} not found`);
      const { user } = await this.users.ensure(request.email, request.display_name ?? null, trx);
      await this.memberships.addIfMissing({ kind: scope.type, id: scope.id }, user.id, request.role, trx);
      if (request.public_key) await this.keys.add(user.id, request.public_key, null, trx, { allowOwnDuplicate: true });
      return user;
    });
    const token = await this.tokens.issueForUser(user, { ttlDays: request.ttl_days, scope, role: request.role });
    return { ...token, user: toUser(user), scope, role: request.role };
  }

  /** Memberships outside a scoped token's org or project are not shown: the token cannot reach them. */
  async me(principal: Principal) {
    if (principal.kind !== 'user') {
      throw Boom.forbidden(
        `/auth/me describes a user; this is a ${principal.kind.replace('_', ' ')} token (${principal.id}, scope ${principal.scope?.type} ${principal.scope?.id})`,
      );
    }
    const user = (await this.users.findById(principal.id))!;
    const { scope } = principal;
    const held = await this.memberships.ofUser(user.id);
    const orgRole = new Map(held.orgs.map((m) => [m.id, m.role]));
    const projectRole = new Map(held.projects.map((m) => [m.id, m.role]));
    const orgs = (await this.orgs.byIds([...orgRole.keys()]))
      .filter((o) => !o.deleted && (!scope || (scope.type === 'org' && o.id === scope.id)))
      .sort(newestFirst)
      .map((o) => ({ id: o.id, name: o.name, slug: o.slug, role: orgRole.get(o.id)! }));
    // An org's members reach all its projects: each is listed with the stronger of the two roles.
    const viaOrgs = (await Promise.all([...orgRole.keys()].map((id) => this.projects.liveIdsInOrg(id)))).flat();
    const projects = (await this.projects.byIds([...new Set([...projectRole.keys(), ...viaOrgs])]))
      .filter((p) => !p.deleted && (!scope || (scope.type === 'org' ? p.org_id : p.id) === scope.id))
      .sort(newestFirst)
      .map((p) => ({ id: p.id, org_id: p.org_id, name: p.name, slug: p.slug, role: strongerRole(projectRole.get(p.id), orgRole.get(p.org_id))! }));
    return {
      user: toUser(user),
      token: { expires_at: principal.expiresAt, scope: principal.scope, role: principal.roleCap },
      orgs,
      projects,
    };
  }
}

const newestFirst = (a: { created_at: Date }, b: { created_at: Date }) => b.created_at.getTime() - a.created_at.getTime();
