import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import { Schedules, type ScheduleChanges, type ScheduleInput } from './schedules.ts';
import * as S from './schemas.ts';

const tags = ['api', 'events'];

export function scheduleRoutes(container: DependencyContainer): ServerRoute[] {
  const schedules = container.resolve(Schedules);
  const base = '/projects/{project_id}/schedules';
  return [
    {
      method: 'GET',
      path: base,
      options: {
        id: 'listSchedules',
        tags,
        description: "The project's schedules, newest first",
        plugins: { ...requires('events:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.projectParams, query: S.schedulesQuery },
        response: { schema: pageSchema(S.scheduleSchema, 'ScheduleList') },
      },
      handler: (request) => schedules.list(paramsOf(request).project_id, queryOf<ListQuery & { enabled?: boolean }>(request)),
    },
    {
      method: 'POST',
      path: base,
      options: {
        id: 'createSchedule',
        tags,
        description: 'Create a schedule: a cron expression (UTC) that emits an event of the given type and payload',
        plugins: { ...requires('events:write', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.projectParams, payload: S.createScheduleSchema },
        response: { status: { 201: S.scheduleSchema } },
      },
      handler: async (request, h) =>
        h.response(await schedules.create(paramsOf(request).project_id, principalOf(request).id, payloadOf<ScheduleInput>(request))).code(201),
    },
    {
      method: 'POST',
      path: `${base}/ensure`,
      options: {
        id: 'ensureSchedule',
        tags,
        description:
          'Find or create a schedule by name: 200 with it, created when missing or as it is when cron, event_type, payload and enabled match; 409 naming the fields that differ',
        plugins: { ...requires('events:write', 'project'), ...docs(400, 401, 403, 404, 409) },
        validate: { params: S.projectParams, payload: S.ensureScheduleSchema },
        response: { schema: S.scheduleSchema },
      },
      handler: async (request) =>
        (await schedules.ensure(paramsOf(request).project_id, principalOf(request).id, payloadOf<ScheduleInput & { name: string }>(request))).schedule,
    },
    {
      method: 'GET',
      path: `${base}/{schedule_id}`,
      options: {
        id: 'getSchedule',
        tags,
        description: 'One schedule',
        plugins: { ...requires('events:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.scheduleParams },
        response: { schema: S.scheduleSchema },
      },
      handler: (request) => schedules.get(paramsOf(request).project_id, paramsOf(request).schedule_id),
    },
    {
      method: 'PATCH',
      path: `${base}/{schedule_id}`,
      options: {
        id: 'updateSchedule',
        tags,
        description: 'Change a schedule (cron, event type, payload, enabled, name)',
        plugins: { ...requires('events:write', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.scheduleParams, payload: S.updateScheduleSchema },
        response: { schema: S.scheduleSchema },
      },
      handler: (request) => schedules.update(paramsOf(request).project_id, paramsOf(request).schedule_id, payloadOf<ScheduleChanges>(request)),
    },
    {
      method: 'DELETE',
      path: `${base}/{schedule_id}`,
      options: {
        id: 'deleteSchedule',
        tags,
        description: 'Delete a schedule',
        plugins: { ...requires('events:write', 'project'), ...docs(204, 400, 401, 403, 404) },
        validate: { params: S.scheduleParams },
      },
      handler: async (request, h) => {
        await schedules.remove(paramsOf(request).project_id, paramsOf(request).schedule_id);
        return h.response().code(204);
      },
    },
  ];
}
