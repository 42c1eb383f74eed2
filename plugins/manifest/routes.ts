import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { paramsOf, payloadOf } from '../../core/http/request.ts';
import { principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import * as S from './schemas.ts';
import { ManifestService, type ManifestSourceInput } from './service.ts';

const tags = ['api', 'manifest'];

/** hapi-swagger responses: the usual error codes plus the 422 that lists every problem. */
function withInvalid(...codes: number[]) {
  const base = docs(...codes)['hapi-swagger'].responses;
  return {
    'hapi-swagger': { responses: { ...base, 422: { description: 'Invalid manifest, or the repository could not be read', schema: S.invalidManifestSchema } } },
  };
}

export function manifestRoutes(container: DependencyContainer): ServerRoute[] {
  const service = container.resolve(ManifestService);
  return [
    {
      method: 'GET',
      path: '/projects/{project_id}/manifest',
      options: {
        id: 'getManifest',
        tags,
        description: 'The current (last synced) manifest; 404 when none was synced',
        plugins: { ...requires('manifest:read', 'project'), ...docs(400, 401, 404) },
        validate: { params: S.projectParams },
        response: { schema: S.manifestSchema },
      },
      handler: (request) => service.current(paramsOf(request).project_id),
    },
    {
      method: 'POST',
      path: '/projects/{project_id}/manifest',
      options: {
        id: 'syncManifest',
        tags,
        description:
          "Sync the manifest from {yaml}, or from .svc/manifest.yaml in the project's repository at {ref} (default: the project branch). 422 lists every problem and stores nothing.",
        plugins: { ...requires('manifest:write', 'project'), ...withInvalid(400, 401, 403, 404) },
        validate: { params: S.projectParams, payload: S.manifestSource },
        response: { schema: S.manifestSchema },
      },
      handler: (request) => service.sync(paramsOf(request).project_id, payloadOf<ManifestSourceInput>(request) ?? {}, principalOf(request)),
    },
    {
      method: 'POST',
      path: '/projects/{project_id}/manifest/validate',
      options: {
        id: 'validateManifest',
        tags,
        description: 'Validate a manifest (same body as sync) without storing it: {valid, errors: [{path, message}]}',
        plugins: { ...requires('manifest:read', 'project'), ...withInvalid(400, 401, 404) },
        validate: { params: S.projectParams, payload: S.manifestSource },
        response: { schema: S.validationSchema },
      },
      handler: (request) => service.validate(paramsOf(request).project_id, payloadOf<ManifestSourceInput>(request) ?? {}),
    },
  ];
}
