import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { isUniqueViolation } from '../../core/http/unique.ts';
import type { Grant, Principal } from '../../core/auth/principal.ts';
import { IntegrationRepository, type RouteRow } from './repository.ts';

export interface RouteInput {
  team_id: string;
  channel: string | null;
}

const describe = (input: RouteInput) => (input.channel ? `channel ${input.channel} of chat team ${input.team_id}` : `chat team ${input.team_id}`);

/**
 * Chat routes. A team belongs to one org (the one whose projects route it first); within it each
 * channel, and the team as a whole, routes to one project.
 */
@injectable()
export class ChatRoutes {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(IntegrationRepository) private readonly repo: IntegrationRepository,
  ) {}

  async create(principal: Principal, grant: Grant, input: RouteInput): Promise<RouteRow> {
    const projectId = grant.projectId!;
    if (!(await this.repo.liveProject(projectId))) throw Boom.badData(`project ${projectId} is deleted`);
    try {
      return await this.db.transaction(async (trx) => {
        const held = await this.repo.lockTeam(trx, input.team_id);
        if (held.some((r) => r.org_id !== grant.orgId)) throw Boom.conflict(`chat team ${input.team_id} is routed by another org`);
        if (held.some((r) => r.channel === input.channel)) throw Boom.conflict(`${describe(input)} is already routed`);
        return this.repo.insert(trx, { id: newId('route'), org_id: grant.orgId, project_id: projectId, ...input, created_by: principal.id });
      });
    } catch (e) {
      if (isUniqueViolation(e, 'chat_routes_team_channel')) throw Boom.conflict(`${describe(input)} is already routed`);
      throw e;
    }
  }
}
