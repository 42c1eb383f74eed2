import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { grantOf, principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { listQuerySchema, pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import * as S from './schemas.ts';
import { ServiceAccounts, type MintInput, type ServiceAccountInput } from './service-accounts.ts';

const tags = ['api', 'service accounts'];
const read = requires('access:read', 'org');
const admin = requires('access:admin', 'org');

/** Service accounts and their tokens, under `collection` (`service-accounts`, and the alias `service-principals`). */
export function serviceAccountRoutes(container: DependencyContainer, collection: string): ServerRoute[] {
  const accounts = container.resolve(ServiceAccounts);
  const base = `/orgs/{org_id}/${collection}`;
  const alias = collection !== 'service-accounts';
  const described = (text: string) => (alias ? `${text} (alias of /service-accounts)` : text);
  const noun = alias ? 'ServicePrincipal' : 'ServiceAccount'; // operation ids: listServiceAccounts, listServicePrincipals, …

  return [
    {
      method: 'GET',
      path: base,
      options: {
        id: `list${noun}s`,
        tags,
        description: described('Service accounts of the org, newest first'),
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: listQuerySchema },
        response: { schema: pageSchema(S.serviceAccountSchema, 'ServiceAccountList') },
      },
      handler: (request) => accounts.list(paramsOf(request).org_id, queryOf<ListQuery>(request)),
    },
    {
      method: 'POST',
      path: base,
      options: {
        id: `create${noun}`,
        tags,
        description: described('Create a service account; with `role` it is bound that role at once'),
        plugins: { ...admin, ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.orgParams, payload: S.createServiceAccount },
        response: { status: { 201: S.serviceAccountSchema } },
      },
      handler: async (request, h) =>
        h
          .response(await accounts.create(grantOf(request), paramsOf(request).org_id, payloadOf<ServiceAccountInput>(request), principalOf(request).id))
          .code(201),
    },
    {
      method: 'POST',
      path: `${base}/ensure`,
      options: {
        id: `ensure${noun}`,
        tags,
        description: described(
          'Find or create a service account by name: 200 with it, created when missing or as it is when description and role (bound there) match; 409 naming the fields that differ',
        ),
        plugins: { ...admin, ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.orgParams, payload: S.createServiceAccount },
        response: { schema: S.serviceAccountSchema },
      },
      handler: async (request) =>
        (await accounts.ensure(grantOf(request), paramsOf(request).org_id, payloadOf<ServiceAccountInput>(request), principalOf(request).id)).account,
    },
    {
      method: 'GET',
      path: `${base}/{sa_id}`,
      options: {
        id: `get${noun}`,
        tags,
        description: described('One service account'),
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: S.serviceAccountParams },
        response: { schema: S.serviceAccountSchema },
      },
      handler: (request) => accounts.get(paramsOf(request).org_id, paramsOf(request).sa_id),
    },
    {
      method: 'PATCH',
      path: `${base}/{sa_id}`,
      options: {
        id: `update${noun}`,
        tags,
        description: described("Change a service account's description"),
        plugins: { ...admin, ...docs(400, 401, 403, 404) },
        validate: { params: S.serviceAccountParams, payload: S.updateServiceAccount },
        response: { schema: S.serviceAccountSchema },
      },
      handler: (request) => accounts.update(paramsOf(request).org_id, paramsOf(request).sa_id, payloadOf(request)),
    },
    {
      method: 'DELETE',
      path: `${base}/{sa_id}`,
      options: {
        id: `delete${noun}`,
        tags,
        description: described('Delete a service account: its tokens stop working at once'),
        plugins: { ...admin, ...docs(204, 400, 401, 403, 404) },
        validate: { params: S.serviceAccountParams },
      },
      handler: async (request, h) => {
        await accounts.remove(paramsOf(request).org_id, paramsOf(request).sa_id);
        return h.response().code(204);
      },
    },
    {
      method: 'GET',
      path: `${base}/{sa_id}/tokens`,
      options: {
        id: `list${noun}Tokens`,
        tags,
        description: described('Tokens of a service account (never their values)'),
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: S.serviceAccountParams, query: listQuerySchema },
        response: { schema: pageSchema(S.serviceTokenSchema, 'ServiceAccountTokenList') },
      },
      handler: (request) => accounts.tokens(paramsOf(request).org_id, paramsOf(request).sa_id, queryOf<ListQuery>(request)),
    },
    {
      method: 'POST',
      path: `${base}/{sa_id}/tokens`,
      options: {
        id: `mint${noun}Token`,
        tags,
        description: described(
          'Mint a token: org or project scope, explicit permissions (held by you and by the account), TTL 1-90 days; the value is shown once',
        ),
        plugins: { ...admin, ...docs(400, 401, 403, 404, 422) },
        validate: { params: S.serviceAccountParams, payload: S.mintServiceToken },
        response: { status: { 201: S.mintedServiceTokenSchema } },
      },
      handler: async (request, h) =>
        h
          .response(
            await accounts.mint(grantOf(request), paramsOf(request).org_id, paramsOf(request).sa_id, payloadOf<MintInput>(request), principalOf(request).id),
          )
          .code(201),
    },
    {
      method: 'DELETE',
      path: `${base}/{sa_id}/tokens/{token_id}`,
      options: {
        id: `revoke${noun}Token`,
        tags,
        description: described('Revoke a token: it stops working at once'),
        plugins: { ...admin, ...docs(204, 400, 401, 403, 404) },
        validate: { params: S.serviceTokenParams },
      },
      handler: async (request, h) => {
        const p = paramsOf(request);
        await accounts.revoke(p.org_id, p.sa_id, p.token_id);
        return h.response().code(204);
      },
    },
  ];
}
