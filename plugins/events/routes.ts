import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import { EventRepository, type EventFilters } from './repository.ts';
import { EventService, type EventRequest } from './service.ts';
import * as S from './schemas.ts';

const tags = ['api', 'events'];

export function eventRoutes(container: DependencyContainer): ServerRoute[] {
  const service = container.resolve(EventService);
  const events = container.resolve(EventRepository);
  return [
    {
      method: 'POST',
      path: '/projects/{project_id}/events',
      options: {
        id: 'emitEvent',
        tags,
        description: 'Emit an event (stored pending; the orchestrator routes it to matching triggers). A known dedupe_key answers 200 with the earlier event',
        plugins: { ...requires('events:write', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.projectParams, payload: S.createEventSchema },
        response: { status: { 200: S.eventSchema, 201: S.eventSchema } },
      },
      handler: async (request, h) => {
        const { event, created } = await service.create(principalOf(request), paramsOf(request).project_id, payloadOf<EventRequest>(request));
        return h.response(event).code(created ? 201 : 200);
      },
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/events',
      options: {
        id: 'listProjectEvents',
        tags,
        description: "The project's events, newest first (filters type, source, status)",
        plugins: { ...requires('events:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.projectParams, query: S.eventsQuery },
        response: { schema: pageSchema(S.eventSchema, 'EventList') },
      },
      handler: (request) => events.list({ projectId: paramsOf(request).project_id }, queryOf<EventFilters>(request)),
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/events/{event_id}',
      options: {
        id: 'getEvent',
        tags,
        description: 'One event, with its routing: which triggers matched (and what they started) and why the others did not',
        plugins: { ...requires('events:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.eventParams },
        response: { schema: S.eventSchema },
      },
      handler: (request) => service.get(paramsOf(request).project_id, paramsOf(request).event_id),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/events',
      options: {
        id: 'listOrgEvents',
        tags,
        description: 'The events of every project of the org, newest first (filters type, source, status)',
        plugins: { ...requires('events:read', 'org'), ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: S.eventsQuery },
        response: { schema: pageSchema(S.eventSchema, 'EventList') },
      },
      handler: (request) => events.list({ orgId: paramsOf(request).org_id }, queryOf<EventFilters>(request)),
    },
  ];
}
