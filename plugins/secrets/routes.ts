import Boom from '@hapi/boom';
import type { Request, ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { authenticated, grantOf, principalOf, requires, systemAdmin } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import * as S from './schemas.ts';
import type { SecretOwner } from './sealing.ts';
import { SecretService, type SecretInput, type SecretReplacement } from './service.ts';
import { UserDirectoryToken } from '../../core/ports/directory.ts';

const tags = ['api', 'secrets'];

/** How one scope's routes are guarded and whose secrets they reach. */
interface ScopeSpec {
  scope: S.SecretScope;
  base: string;
  read: Record<string, unknown>;
  write: Record<string, unknown>;
  owner(request: Request): SecretOwner | Promise<SecretOwner>;
}

export function secretRoutes(container: DependencyContainer): ServerRoute[] {
  const service = container.resolve(SecretService);
  const users = container.resolve(UserDirectoryToken);

  /** Own secrets, or any user's for the system administrator; anyone else's user id is 404. */
  const userOwner = async (request: Request): Promise<SecretOwner> => {
    const principal = principalOf(request);
    const id = paramsOf(request).user_id;
    // Minted, service-account and job tokens are limited to an org or project; user secrets are neither.
    if (principal.kind !== 'user' || principal.scope) throw Boom.forbidden('only an unscoped user token can reach user secrets');
    const visible = id === principal.id || (principal.isAdmin && (await users.findById(id)));
    if (!visible) throw Boom.notFound(`user ${id} not found`);
    return { scope: 'user', id };
  };

  const scopes: ScopeSpec[] = [
    {
      scope: 'project',
      base: '/projects/{project_id}/secrets',
      read: requires('secrets:read', 'project'),
      write: requires('secrets:admin', 'project'),
      owner: (r) => ({ scope: 'project', id: grantOf(r).projectId }),
    },
    {
      scope: 'org',
      base: '/orgs/{org_id}/secrets',
      read: requires('secrets:read', 'org'),
      write: requires('secrets:admin', 'org'),
      owner: (r) => ({ scope: 'org', id: grantOf(r).orgId }),
    },
    { scope: 'user', base: '/users/{user_id}/secrets', read: authenticated, write: authenticated, owner: userOwner },
    { scope: 'system', base: '/system/secrets', read: systemAdmin, write: systemAdmin, owner: () => ({ scope: 'system', id: null }) },
  ];
  return scopes.flatMap((spec) => routesFor(spec, service));
}

function routesFor(spec: ScopeSpec, service: SecretService): ServerRoute[] {
  const { scope, base, read, write, owner } = spec;
  const params = S.params[scope];
  const named = S.namedParams[scope];
  const item = `${base}/{name}`;
  const noun = `${scope[0].toUpperCase()}${scope.slice(1)}Secret`; // operation ids: createOrgSecret, listOrgSecrets, …
  return [
    {
      method: 'POST',
      path: base,
      options: {
        id: `create${noun}`,
        tags,
        description: `Create a ${scope} secret; the answer is its metadata, never the value`,
        plugins: { ...write, ...docs(400, 401, 403, 404, 409, ...(scope === 'system' ? [422] : [])) },
        validate: { ...(params && { params }), payload: scope === 'system' ? S.createSystemSecret : S.createSecret },
        response: { status: { 201: S.secretSchema } },
      },
      handler: async (request, h) => h.response(await service.create(await owner(request), payloadOf<SecretInput>(request))).code(201),
    },
    {
      method: 'POST',
      path: `${base}/ensure`,
      options: {
        id: `ensure${noun}`,
        tags,
        description: `Find or create a ${scope} secret by name: 200 when created or when every field but the value matches (the value is write-only: never compared, never changed), 409 naming the differing field otherwise`,
        plugins: { ...write, ...docs(400, 401, 403, 404, 409, ...(scope === 'system' ? [422] : [])) },
        validate: { ...(params && { params }), payload: scope === 'system' ? S.createSystemSecret : S.createSecret },
        response: { schema: S.secretSchema },
      },
      handler: async (request) => service.ensure(await owner(request), payloadOf<SecretInput>(request)),
    },
    {
      method: 'GET',
      path: base,
      options: {
        id: `list${noun}s`,
        tags,
        description: `List ${scope} secrets (metadata only), newest first`,
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { ...(params && { params }), query: S.listSecretsQuery },
        response: { schema: pageSchema(S.secretSchema, 'SecretList') },
      },
      handler: async (request) => service.list(await owner(request), queryOf<ListQuery>(request)),
    },
    {
      method: 'GET',
      path: item,
      options: {
        id: `get${noun}`,
        tags,
        description: `One ${scope} secret's metadata`,
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: named },
        response: { schema: S.secretSchema },
      },
      handler: async (request) => service.get(await owner(request), paramsOf(request).name),
    },
    {
      method: 'PUT',
      path: item,
      options: {
        id: `replace${noun}`,
        tags,
        description:
          scope === 'system'
            ? "Replace a system secret's value (and type, when given), or set whether it is shared with jobs, or both; 404 when it does not exist"
            : `Replace a ${scope} secret's value (and type, when given); 404 when it does not exist`,
        plugins: { ...write, ...docs(400, 401, 403, 404, ...(scope === 'system' ? [422] : [])) },
        validate: { params: named, payload: scope === 'system' ? S.replaceSystemSecret : S.replaceSecret },
        response: { schema: S.secretSchema },
      },
      handler: async (request) => service.replace(await owner(request), paramsOf(request).name, payloadOf<SecretReplacement>(request)),
    },
    {
      method: 'DELETE',
      path: item,
      options: {
        id: `delete${noun}`,
        tags,
        description: `Delete a ${scope} secret`,
        plugins: { ...write, ...docs(204, 400, 401, 403, 404) },
        validate: { params: named },
      },
      handler: async (request, h) => {
        await service.remove(await owner(request), paramsOf(request).name);
        return h.response().code(204);
      },
    },
  ];
}
