import Boom from '@hapi/boom';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { grantOf, principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import { IntegrationRepository, type RouteFilters } from './repository.ts';
import { ChatRoutes, type RouteInput } from './service.ts';
import * as S from './schemas.ts';

const tags = ['api', 'integrations'];

/** `/projects/{project_id}/routes`: which chat team (and channel) feeds the project's events. */
export function chatRouteRoutes(container: DependencyContainer): ServerRoute[] {
  const repo = container.resolve(IntegrationRepository);
  const service = container.resolve(ChatRoutes);
  const notFound = (id: string) => Boom.notFound(`chat route ${id} not found`);

  return [
    {
      method: 'POST',
      path: '/projects/{project_id}/routes',
      options: {
        id: 'createChatRoute',
        tags,
        description: "Route a chat team's messages (all channels, or one) to the project",
        plugins: { ...requires('routes:write', 'project'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.projectParams, payload: S.createRouteSchema },
        response: { status: { 201: S.routeSchema } },
      },
      handler: async (request, h) => h.response(await service.create(principalOf(request), grantOf(request), payloadOf<RouteInput>(request))).code(201),
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/routes',
      options: {
        id: 'listChatRoutes',
        tags,
        description: "The project's chat routes, newest first",
        plugins: { ...requires('routes:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.projectParams, query: S.routesQuery },
        response: { schema: pageSchema(S.routeSchema, 'ChatRouteList') },
      },
      handler: (request) => repo.list(paramsOf(request).project_id, queryOf<RouteFilters>(request)),
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/routes/{route_id}',
      options: {
        id: 'getChatRoute',
        tags,
        description: 'One chat route of the project',
        plugins: { ...requires('routes:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.routeParams },
        response: { schema: S.routeSchema },
      },
      handler: async (request) => {
        const { project_id, route_id } = paramsOf(request);
        return (await repo.byId(project_id, route_id)) ?? notFound(route_id);
      },
    },
    {
      method: 'DELETE',
      path: '/projects/{project_id}/routes/{route_id}',
      options: {
        id: 'deleteChatRoute',
        tags,
        description: 'Stop routing: later messages of that team or channel are not stored for the project',
        plugins: { ...requires('routes:write', 'project'), ...docs(204, 400, 401, 403, 404) },
        validate: { params: S.routeParams },
      },
      handler: async (request, h) => {
        const { project_id, route_id } = paramsOf(request);
        if (!(await repo.remove(project_id, route_id))) throw notFound(route_id);
        return h.response().code(204);
      },
    },
  ];
}
