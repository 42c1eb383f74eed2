import { paramsOf, queryOf } from '../../core/http/request.ts';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { grantOf, principalOf, requires, authenticated } from '../../core/http/access.ts';
import { docs, projectId } from '../../core/http/schemas.ts';
import { pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { memberRoutes } from '../../domain/members/routes.ts';
import * as S from './schemas.ts';
import { ProjectRepository } from './repository.ts';
import { ProjectService, type ProjectChanges, type ProjectInput } from './service.ts';

const tags = ['api', 'projects'];

export function projectRoutes(container: DependencyContainer): ServerRoute[] {
  const service = container.resolve(ProjectService);
  const repository = container.resolve(ProjectRepository);

  return [
    {
      method: 'POST',
      path: '/projects',
      options: {
        id: 'createProject',
        tags,
        description: 'Create a project in an org (slug: 4 to 8 letters and digits, unique, immutable; derived from the name when omitted)',
        plugins: { ...requires('projects:create', 'payload.org'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { payload: S.createProject },
        response: { status: { 201: S.projectSchema } },
      },
      handler: async (request, h) => h.response(await service.create(request.payload as ProjectInput)).code(201),
    },
    {
      method: 'POST',
      path: '/projects/ensure',
      options: {
        id: 'ensureProject',
        tags,
        description: 'Find or create a project by id, slug, or name in the org: 200 when created or identical, 409 on other parameters',
        plugins: { ...requires('projects:create', 'payload.org'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { payload: S.ensureProject },
        response: { schema: S.projectSchema },
      },
      handler: (request) => service.ensure(principalOf(request), request.payload as ProjectInput),
    },
    {
      method: 'GET',
      path: '/projects',
      options: {
        id: 'listProjects',
        tags,
        description: 'Projects the caller can see, newest first',
        plugins: { ...authenticated, ...docs(400, 401) },
        validate: { query: S.listProjectsQuery },
        response: { schema: pageSchema(S.projectSchema, 'ProjectList') },
      },
      handler: (request) => repository.list(principalOf(request), queryOf<ListQuery>(request)),
    },
    {
      method: 'GET',
      path: '/projects/{project_id}',
      options: {
        id: 'getProject',
        tags,
        description: 'One project',
        plugins: { ...requires('projects:read', 'project'), ...docs(400, 401, 404) },
        validate: { params: S.projectParams },
        response: { schema: S.projectSchema },
      },
      handler: (request) => service.get(paramsOf(request).project_id),
    },
    {
      method: 'PATCH',
      path: '/projects/{project_id}',
      options: {
        id: 'updateProject',
        tags,
        description: 'Change name, repository or branch, or soft-delete with {deleted: true} (deleting needs projects:delete)',
        plugins: { ...requires('projects:write', 'project'), ...docs(400, 401, 403, 404, 422) },
        validate: { params: S.projectParams, payload: S.updateProject },
        response: { schema: S.projectSchema },
      },
      handler: (request) => service.update(grantOf(request), request.payload as ProjectChanges),
    },
    {
      method: 'DELETE',
      path: '/projects/{project_id}',
      options: {
        id: 'deleteProject',
        tags,
        description: 'Soft-delete the project (same as PATCH {deleted: true})',
        plugins: { ...requires('projects:delete', 'project'), ...docs(204, 400, 401, 403, 404) },
        validate: { params: S.projectParams },
      },
      handler: async (request, h) => {
        await service.update(grantOf(request), { deleted: true });
        return h.response().code(204);
      },
    },
    ...memberRoutes(container, { kind: 'project', param: 'project_id', idSchema: projectId, tag: 'projects' }),
  ];
}
