import type { ServerRoute } from '@hapi/hapi';
import { grantOf, principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import type { EnsureRequest, EnvironmentService } from './service.ts';
import type { EnvironmentType } from './repository.ts';
import * as S from './schemas.ts';

export const tags = ['api', 'environments'];
export const BASE = '/projects/{project_id}/environments';

export function environmentRoutes(service: EnvironmentService): ServerRoute[] {
  const one = { response: { schema: S.environmentSchema } };
  return [
    {
      method: 'GET',
      path: BASE,
      options: {
        id: 'listEnvironments',
        tags,
        description: "The project's environments, newest first",
        plugins: { ...requires('environments:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.projectParams, query: S.listQuery },
        response: { schema: pageSchema(S.environmentSchema, 'EnvironmentList') },
      },
      handler: (request) => service.list(paramsOf(request).project_id, queryOf<ListQuery & { kind?: string; type?: EnvironmentType }>(request)),
    },
    {
      method: 'POST',
      path: BASE,
      options: {
        id: 'createEnvironment',
        tags,
        description: 'Create an environment (201); one of that name exists: 409 (POST …/environments/ensure answers it instead)',
        plugins: { ...requires('environments:write', 'project'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.projectParams, payload: S.ensureSchema },
        response: { status: { 201: S.environmentSchema } },
      },
      handler: async (request, h) => {
        const { name, ...fields } = payloadOf<EnsureRequest & { name: string }>(request);
        const { env } = await service.ensure(principalOf(request), paramsOf(request).project_id, name, fields, 'create');
        return h.response(env).code(201);
      },
    },
    {
      method: 'POST',
      path: `${BASE}/ensure`,
      options: {
        id: 'ensureEnvironment',
        tags,
        description:
          'Find or create an environment: 200 with it, created when missing or as it is when the fields given match; 409 naming the fields an existing one holds otherwise',
        plugins: { ...requires('environments:write', 'project'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.projectParams, payload: S.ensureSchema },
        response: { schema: S.environmentSchema },
      },
      handler: async (request) => {
        const { name, ...fields } = payloadOf<EnsureRequest & { name: string }>(request);
        return (await service.ensure(principalOf(request), paramsOf(request).project_id, name, fields, 'match')).env;
      },
    },
    {
      method: 'GET',
      path: `${BASE}/{env}`,
      options: {
        id: 'getEnvironment',
        tags,
        description: 'One environment: health, suspension, current release',
        plugins: { ...requires('environments:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.envParams },
        ...one,
      },
      handler: (request) => service.get(paramsOf(request).project_id, paramsOf(request).env),
    },
    {
      method: 'DELETE',
      path: `${BASE}/{env}`,
      options: {
        id: 'deleteEnvironment',
        tags,
        description: 'Delete an environment and what runs for it (a persistent one needs environments:admin)',
        plugins: { ...requires('environments:write', 'project'), ...docs(204, 400, 401, 403, 404, 502) },
        validate: { params: S.envParams },
      },
      handler: async (request, h) => {
        const { project_id, env } = paramsOf(request);
        await service.remove(project_id, env, grantOf(request).permissions.has('environments:admin'));
        return h.response().code(204);
      },
    },
    {
      method: 'POST',
      path: `${BASE}/{env}/suspend`,
      options: {
        id: 'suspendEnvironment',
        tags,
        description: 'Suspend: its services stop; deploys and jobs naming it are refused until resume',
        plugins: { ...requires('environments:write', 'project'), ...docs(400, 401, 403, 404, 409, 502) },
        validate: { params: S.envParams, payload: S.suspendSchema.allow(null) },
        ...one,
      },
      handler: (request) =>
        service.suspend(
          principalOf(request).id,
          paramsOf(request).project_id,
          paramsOf(request).env,
          payloadOf<{ reason?: string } | null>(request)?.reason ?? null,
        ),
    },
    {
      method: 'POST',
      path: `${BASE}/{env}/resume`,
      options: {
        id: 'resumeEnvironment',
        tags,
        description: 'Resume a suspended environment: its current release runs again',
        plugins: { ...requires('environments:write', 'project'), ...docs(400, 401, 403, 404, 409, 502) },
        validate: { params: S.envParams },
        ...one,
      },
      handler: (request) => service.resume(principalOf(request).id, paramsOf(request).project_id, paramsOf(request).env),
    },
    {
      method: 'GET',
      path: `${BASE}/{env}/health`,
      options: {
        id: 'getEnvironmentHealth',
        tags,
        description: 'Health read from the runtime now (a suspended environment answers its last reading)',
        plugins: { ...requires('environments:read', 'project'), ...docs(400, 401, 403, 404, 502) },
        validate: { params: S.envParams },
        ...one,
      },
      handler: (request) => service.health(paramsOf(request).project_id, paramsOf(request).env),
    },
  ];
}
