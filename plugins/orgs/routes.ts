import { paramsOf, queryOf } from '../../core/http/request.ts';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { authenticated, grantOf, principalOf, requires } from '../../core/http/access.ts';
import { docs, orgId } from '../../core/http/schemas.ts';
import { pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { memberRoutes } from '../../domain/members/routes.ts';
import * as S from './schemas.ts';
import { OrgRepository } from './repository.ts';
import { OrgService, type OrgInput } from './service.ts';

const tags = ['api', 'orgs'];

export function orgRoutes(container: DependencyContainer): ServerRoute[] {
  const service = container.resolve(OrgService);
  const repository = container.resolve(OrgRepository);

  return [
    {
      method: 'POST',
      path: '/orgs',
      options: {
        id: 'createOrg',
        tags,
        description: 'Create an org; the caller becomes its owner',
        plugins: { ...authenticated, ...docs(400, 401, 403, 409) },
        validate: { payload: S.createOrg },
        response: { status: { 201: S.orgSchema } },
      },
      handler: async (request, h) => h.response(await service.create(principalOf(request), request.payload as OrgInput)).code(201),
    },
    {
      method: 'POST',
      path: '/orgs/ensure',
      options: {
        id: 'ensureOrg',
        tags,
        description: 'Find or create an org by id or slug: 200 when created or identical, 409 when it exists with other parameters',
        plugins: { ...authenticated, ...docs(400, 401, 403, 409) },
        validate: { payload: S.ensureOrg },
        response: { schema: S.orgSchema },
      },
      handler: (request) => service.ensure(principalOf(request), request.payload as OrgInput),
    },
    {
      method: 'GET',
      path: '/orgs',
      options: {
        id: 'listOrgs',
        tags,
        description: 'Orgs the caller belongs to (every org for the system administrator), newest first',
        plugins: { ...authenticated, ...docs(400, 401) },
        validate: { query: S.listOrgsQuery },
        response: { schema: pageSchema(S.orgSchema, 'OrgList') },
      },
      handler: (request) => repository.list(principalOf(request), queryOf<ListQuery>(request)),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}',
      options: {
        id: 'getOrg',
        tags,
        description: 'One org',
        plugins: { ...requires('orgs:read', 'org'), ...docs(400, 401, 404) },
        validate: { params: S.orgParams },
        response: { schema: S.orgSchema },
      },
      handler: (request) => service.get(paramsOf(request).org_id),
    },
    {
      method: 'PATCH',
      path: '/orgs/{org_id}',
      options: {
        id: 'updateOrg',
        tags,
        description: 'Rename, change the slug, or soft-delete with {deleted: true} (deleting needs orgs:delete)',
        plugins: { ...requires('orgs:write', 'org'), ...docs(400, 401, 403, 404, 409) },
        validate: { params: S.orgParams, payload: S.updateOrg },
        response: { schema: S.orgSchema },
      },
      handler: (request) => service.update(grantOf(request), request.payload as { name?: string }),
    },
    {
      method: 'DELETE',
      path: '/orgs/{org_id}',
      options: {
        id: 'deleteOrg',
        tags,
        description: 'Soft-delete the org (same as PATCH {deleted: true})',
        plugins: { ...requires('orgs:delete', 'org'), ...docs(204, 400, 401, 403, 404) },
        validate: { params: S.orgParams },
      },
      handler: async (request, h) => {
        await service.update(grantOf(request), { deleted: true });
        return h.response().code(204);
      },
    },
    ...memberRoutes(container, { kind: 'org', param: 'org_id', idSchema: orgId, tag: 'orgs' }),
  ];
}
