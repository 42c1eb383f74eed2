import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import { TeamBindings } from './bindings.ts';
import * as S from './schemas.ts';

const tags = ['api', 'integrations'];

/** `/orgs/{org_id}/chat-teams`: binding a chat team to the org, which its projects' routes need. */
export function bindingRoutes(container: DependencyContainer): ServerRoute[] {
  const bindings = container.resolve(TeamBindings);
  return [
    {
      method: 'POST',
      path: '/orgs/{org_id}/chat-teams',
      options: {
        id: 'requestChatTeamBinding',
        tags,
        description: 'Ask for a one-time code that binds a chat team to the org once the team posts it',
        notes:
          'The code is shown once, valid 15 minutes and single use. Someone in the team posts "bind <code>" (a message in a channel the app is in, or a mention of the app); the signed event binds the team to this org. 409 when the team is already bound (to this org or another).',
        plugins: { ...requires('routes:write', 'org'), ...docs(400, 401, 403, 404, 409) },
        validate: { params: S.orgParams, payload: S.requestBindingSchema },
        response: { status: { 201: S.bindingCodeSchema } },
      },
      handler: async (request, h) => {
        const { org_id } = paramsOf(request);
        const { team_id } = payloadOf<{ team_id: string }>(request);
        const issued = await bindings.requestCode(principalOf(request), org_id, team_id);
        return h.response({ team_id, org_id, status: 'pending', ...issued }).code(201);
      },
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/chat-teams',
      options: {
        id: 'listChatTeams',
        tags,
        description: 'The chat teams bound to the org, newest binding first',
        plugins: { ...requires('routes:read', 'org'), ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: S.bindingsQuery },
        response: { schema: pageSchema(S.bindingStatusSchema, 'ChatTeamBindingList') },
      },
      handler: (request) => bindings.list(paramsOf(request).org_id, queryOf<ListQuery>(request)),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/chat-teams/{team_id}',
      options: {
        id: 'getChatTeam',
        tags,
        description: "The team's binding to the org: active, or pending while a code is unused and unexpired",
        plugins: { ...requires('routes:read', 'org'), ...docs(400, 401, 403, 404) },
        validate: { params: S.chatTeamParams },
        response: { schema: S.bindingStatusSchema },
      },
      handler: (request) => {
        const { org_id, team_id } = paramsOf(request);
        return bindings.status(org_id, team_id);
      },
    },
    {
      method: 'DELETE',
      path: '/orgs/{org_id}/chat-teams/{team_id}',
      options: {
        id: 'unbindChatTeam',
        tags,
        description: "Unbind the team: the org's routes of it and its unused codes are removed; another org may then bind it",
        plugins: { ...requires('routes:write', 'org'), ...docs(204, 400, 401, 403, 404) },
        validate: { params: S.chatTeamParams },
      },
      handler: async (request, h) => {
        const { org_id, team_id } = paramsOf(request);
        await bindings.unbind(org_id, team_id);
        return h.response().code(204);
      },
    },
  ];
}
