import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { paginate, type ListQuery, type Page } from '../../core/http/lists.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';

export interface RouteRow {
  id: string;
  org_id: string;
  project_id: string;
  team_id: string;
  channel: string | null;
  created_by: string | null;
  created_at: Date;
}

export type RouteFilters = Pick<ListQuery, 'limit' | 'offset'> & { team_id?: string };

@injectable()
export class IntegrationRepository {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
  ) {}

  list(projectId: string, filters: RouteFilters): Promise<Page<RouteRow>> {
    const query = this.db('chat_routes').where({ project_id: projectId });
    if (filters.team_id) query.where({ team_id: filters.team_id });
    return paginate(query, filters, (row: RouteRow) => row, 'chat_routes');
  }

  byId(projectId: string, routeId: string): Promise<RouteRow | undefined> {
    return this.db('chat_routes').where({ id: routeId, project_id: projectId }).first();
  }

  async insert(trx: Db, row: Omit<RouteRow, 'created_at'>): Promise<RouteRow> {
    const [created] = await trx('chat_routes').insert(row).returning('*');
    return created;
  }

  async remove(projectId: string, routeId: string): Promise<boolean> {
    return (await this.db('chat_routes').where({ id: routeId, project_id: projectId }).delete()) > 0;
  }

  /**
   * The routes that already hold this team, under a transaction lock on the team (so two orgs
   * cannot claim one team at once, which no unique index can express).
   */
  async lockTeam(trx: Db, teamId: string): Promise<Pick<RouteRow, 'org_id' | 'channel'>[]> {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`chat_team:${teamId}`]);
    return trx('chat_routes').where({ team_id: teamId }).select('org_id', 'channel');
  }

  /**
   * The live project a team's message goes to: the channel's own route before the team-wide one,
   * among the routes of the org the team is bound to (a route of any other org is never used).
   */
  async projectFor(teamId: string, channel: string | null): Promise<string | null> {
    const candidates: string[] = await this.db('chat_routes')
      .join('chat_team_bindings as b', (j) => j.on('b.team_id', 'chat_routes.team_id').andOn('b.org_id', 'chat_routes.org_id'))
      .where('chat_routes.team_id', teamId)
      .andWhere((w) => (channel ? w.where('channel', channel).orWhereNull('channel') : w.whereNull('channel')))
      .orderByRaw('channel IS NULL')
      .pluck('chat_routes.project_id');
    const live = new Set((await this.projects.byIds(candidates)).filter((p) => !p.deleted).map((p) => p.id));
    return candidates.find((id) => live.has(id)) ?? null;
  }

  /** Whether the project exists and is not deleted. */
  async liveProject(projectId: string): Promise<boolean> {
    const project = await this.projects.byId(projectId);
    return project !== undefined && !project.deleted;
  }
}
