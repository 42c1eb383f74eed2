import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import { ReleaseService, type CreateReleaseInput } from './releases.ts';
import * as S from './schemas.ts';

const tags = ['api', 'releases'];

export function releaseRoutes(container: DependencyContainer): ServerRoute[] {
  const releases = container.resolve(ReleaseService);
  return [
    {
      method: 'POST',
      path: '/projects/{project_id}/releases',
      options: {
        id: 'createRelease',
        tags,
        description:
          "Release a successful build of the project under a tag (201), recording the build's image digests; the same tag for the same commit and digests again answers that release (200); a tag taken otherwise is 409",
        plugins: { ...requires('releases:write', 'project'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.projectParams, payload: S.createReleaseSchema },
        response: { status: { 200: S.releaseSchema, 201: S.releaseSchema } },
      },
      handler: async (request, h) => {
        const { created, ...release } = await releases.create(paramsOf(request).project_id, payloadOf<CreateReleaseInput>(request), principalOf(request));
        return h.response(release).code(created ? 201 : 200);
      },
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/releases',
      options: {
        id: 'listReleases',
        tags,
        description: "The project's releases, newest first",
        plugins: { ...requires('releases:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.projectParams, query: S.listReleasesQuery },
        response: { schema: pageSchema(S.releaseSchema, 'ReleaseList') },
      },
      handler: (request) => releases.list(paramsOf(request).project_id, queryOf<ListQuery>(request)),
    },
    {
      method: 'GET',
      path: '/releases/{tag}',
      options: {
        id: 'getRelease',
        tags,
        description:
          "Resolve a release by its tag with ?project_id= (tags are unique per project), or by its rel_ id alone (project_id optional; given, it must be the release's project)",
        plugins: { ...requires('releases:read', 'release'), ...docs(400, 401, 403, 404) },
        validate: { params: S.releaseParams, query: S.releaseQuery },
        response: { schema: S.releaseSchema },
      },
      handler: (request) => releases.resolve(queryOf<{ project_id?: string }>(request).project_id, paramsOf(request).tag),
    },
  ];
}
