import Boom from '@hapi/boom';
import { Invalid } from '../../core/errors.ts';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { isUniqueViolation } from '../../core/http/unique.ts';
import type { Grant, Principal } from '../../core/auth/principal.ts';
import { IntegrationRepository, type RouteRow } from './repository.ts';
import { BindingRepository } from './binding-repository.ts';

export interface RouteInput {
  team_id: string;
  channel: string | null;
}

const describe = (input: RouteInput) => (input.channel ? `channel ${input.channel} of chat team ${input.team_id}` : `chat team ${input.team_id}`);

/** The 422 of a route for a team that is not bound to the route's org (bound elsewhere, or nowhere: the same words). */
export const notBoundHere = (teamId: string, orgId: string) =>
  `chat team ${teamId} is not bound to this org; bind it first: POST /orgs/${orgId}/chat-teams {"team_id": "${teamId}"} and post "bind <code>" in the team`;

/**
 * Chat routes. A team belongs to the one org it bound itself to (bindings.ts); only that org's
 * projects route it, and within it each channel, and the team as a whole, routes to one project.
 */
@injectable()
export class ChatRoutes {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(IntegrationRepository) private readonly repo: IntegrationRepository,
    @inject(BindingRepository) private readonly bindings: BindingRepository,
  ) {}

  async create(principal: Principal, grant: Grant, input: RouteInput): Promise<RouteRow> {
    const projectId = grant.projectId!;
    if (!(await this.repo.liveProject(projectId))) throw Boom.badData(`project ${projectId} is deleted`);
    try {
      return await this.db.transaction(async (trx) => {
        const held = await this.repo.lockTeam(trx, input.team_id);
        if ((await this.bindings.binding(input.team_id, trx))?.org_id !== grant.orgId) throw new Invalid(notBoundHere(input.team_id, grant.orgId));
        if (held.some((r) => r.org_id === grant.orgId && r.channel === input.channel)) throw Boom.conflict(`${describe(input)} is already routed`);
        return this.repo.insert(trx, { id: newId('route'), org_id: grant.orgId, project_id: projectId, ...input, created_by: principal.id });
      });
    } catch (e) {
      if (isUniqueViolation(e, 'chat_routes_team_channel')) throw Boom.conflict(`${describe(input)} is already routed`);
      throw e;
    }
  }
}
