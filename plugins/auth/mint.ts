import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { Users, toUser } from '../../core/users.ts';
import { TokenService } from '../../core/auth/tokens.ts';
import { UserKeys } from './keys.ts';
import type { RoleName } from '../../core/auth/permissions.ts';
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
      const table = scope.type === 'org' ? 'orgs' : 'projects';
      if (!(await trx(table).where({ id: scope.id }).first('id'))) throw Boom.notFound(`${scope.type} ${scope.id} not found`);
      const { user } = await this.users.ensure(request.email, request.display_name ?? null, trx);
      const members = scope.type === 'org' ? 'org_members' : 'project_members';
      const key = scope.type === 'org' ? 'org_id' : 'project_id';
      await trx(members).insert({ [key]: scope.id, user_id: user.id, role: request.role }).onConflict([key, 'user_id']).ignore();
      if (request.public_key) await this.keys.add(user.id, request.public_key, null, trx, { allowOwnDuplicate: true });
      return user;
    });
    const token = await this.tokens.issueForUser(user, { ttlDays: request.ttl_days, scope, role: request.role });
    return { ...token, user: toUser(user), scope, role: request.role };
  }

  /** Memberships outside a scoped token's org or project are not shown: the token cannot reach them. */
  async me(principal: Principal) {
    if (principal.kind !== 'user') {
      throw Boom.forbidden(`/auth/me describes a user; this is a ${principal.kind.replace('_', ' ')} token (${principal.id}, scope ${principal.scope?.type} ${principal.scope?.id})`);
    }
    const user = (await this.users.findById(principal.id))!;
    const { scope } = principal;
    const orgs = await this.db('orgs')
      .join('org_members', 'org_members.org_id', 'orgs.id')
      .where({ 'org_members.user_id': user.id, 'orgs.deleted': false })
      .modify((q) => {
        if (scope) q.where('orgs.id', scope.type === 'org' ? scope.id : null);
      })
      .orderBy('orgs.created_at', 'desc')
      .select('orgs.id', 'orgs.name', 'orgs.slug', 'org_members.role');
    const projects = await this.db('projects')
      .join('project_members', 'project_members.project_id', 'projects.id')
      .where({ 'project_members.user_id': user.id, 'projects.deleted': false })
      .modify((q) => {
        if (scope) q.where(scope.type === 'org' ? 'projects.org_id' : 'projects.id', scope.id);
      })
      .orderBy('projects.created_at', 'desc')
      .select('projects.id', 'projects.org_id', 'projects.name', 'projects.slug', 'project_members.role');
    return {
      user: toUser(user),
      token: { expires_at: principal.expiresAt, scope: principal.scope, role: principal.roleCap },
      orgs,
      projects,
    };
  }
}
