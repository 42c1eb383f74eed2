import Joi from 'joi';
import type { Server, ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { authenticated, grantOf, principalOf, requires } from '../../core/http/access.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import { docs } from '../../core/http/schemas.ts';
import { listQuerySchema, pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { orgId } from '../../core/http/schemas.ts';
import type { RoleName } from '../../core/auth/permissions.ts';
import { UnknownIdentityHandlerToken } from '../../core/auth/identity-hooks.ts';
import { tokenResponse } from './schemas.ts';
import * as S from './invites-schemas.ts';
import { Invites, type InviteInput } from './invites.ts';
import { InviteIdentities } from './invites-identity.ts';
import { SsoExchange } from './exchange.ts';
import { AppManifests, AppSettingsReader } from './app-settings.ts';
import { AppLogin, type AppInviteInput } from './magic-links.ts';
import { appLoginRoutes } from './app-login-routes.ts';
import { AccessRequests, type AccessRequestInput, type AccessRequestStatus } from './access-requests.ts';

const tags = ['api', 'auth'];
/** Anonymous bodies stay small. */
const SMALL_PAYLOAD = { maxBytes: 32 * 1024 };

/** Who decides: a user is recorded by id; a service account's decision is recorded without one. */
const actorOf = (request: Parameters<typeof grantOf>[0]) => {
  const principal = principalOf(request);
  return { userId: principal.kind === 'user' ? principal.id : null, role: grantOf(request).role };
};

/** Web sign-on exchange, invites and access requests: services, the identity hook, routes. */
export function registerInvites(server: Server, container: DependencyContainer): void {
  container.registerInstance(AppManifests, AppManifests.of(container));
  for (const cls of [Invites, InviteIdentities, SsoExchange, AccessRequests, AppSettingsReader, AppLogin]) container.registerSingleton(cls as never);
  // What the embedder registered first wins (KernelOptions.configure).
  if (!container.isRegistered(UnknownIdentityHandlerToken)) {
    container.register(UnknownIdentityHandlerToken, { useFactory: (c) => c.resolve(InviteIdentities) });
  }
  server.route(inviteRoutes(container));
  server.route(appLoginRoutes(container));
}

function inviteRoutes(container: DependencyContainer): ServerRoute[] {
  const invites = container.resolve(Invites);
  const exchange = container.resolve(SsoExchange);
  const requests = container.resolve(AccessRequests);
  const appLogin = container.resolve(AppLogin);
  const orgParams = Joi.object({ org_id: orgId.required() });

  return [
    {
      method: 'POST',
      path: '/auth/exchange',
      options: {
        id: 'exchangeIdentityToken',
        auth: false,
        tags,
        payload: SMALL_PAYLOAD,
        description:
          'Web sign-on: exchange an identity-provider token (HS256) for a service token; creates the account and applies e-mail invites. 501 when not configured',
        plugins: docs(400, 401, 501),
        validate: { payload: S.exchangeRequest },
        response: { schema: tokenResponse },
      },
      handler: (request) => {
        const { token, ttl_days } = payloadOf<{ token: string; ttl_days?: number }>(request);
        return exchange.exchange(token, ttl_days);
      },
    },
    {
      method: 'POST',
      path: '/auth/invites',
      options: {
        id: 'createInvite',
        tags,
        description: 'Invite to an org (members:write): a single-use code, shown once. No e-mail is sent',
        plugins: { ...requires('members:write', 'payload.org'), ...docs(400, 401, 403, 404, 422) },
        validate: { payload: S.inviteRequest },
        response: { status: { 201: S.createdInviteResponse } },
      },
      handler: async (request, h) => h.response(await invites.create(payloadOf<InviteInput>(request), actorOf(request))).code(201),
    },
    {
      method: 'POST',
      path: '/auth/app-invites',
      options: {
        id: 'createAppInvite',
        tags,
        description:
          "Invite by e-mail to an app (org admin or owner: members:write): the app's branding, and with project_id its x-svc.auth invite rules (allowed_orgs, invited_role); mailed through adapters.mailer",
        plugins: { ...requires('members:write', 'payload.org'), ...docs(400, 401, 403, 404, 422) },
        validate: { payload: S.appInviteRequest },
        response: { status: { 201: S.createdInviteResponse } },
      },
      handler: async (request, h) => {
        const input = await appLogin.appInvite(payloadOf<AppInviteInput>(request));
        return h.response(await invites.create(input, actorOf(request))).code(201);
      },
    },
    {
      method: 'POST',
      path: '/auth/invites/{code}/accept',
      options: {
        id: 'acceptInvite',
        tags,
        description: 'Accept an invite: join its org. 410 when used, revoked or expired; 403 when it names another e-mail',
        plugins: { ...authenticated, ...docs(400, 401, 403, 404, 410) },
        validate: { params: Joi.object({ code: S.inviteCode.required() }) },
        response: { schema: S.acceptResponse },
      },
      handler: (request) => invites.accept(paramsOf(request).code, principalOf(request)),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/invites',
      options: {
        id: 'listInvites',
        tags,
        description: "The org's invites, newest first (members:write); codes are never shown again",
        plugins: { ...requires('members:write', 'org'), ...docs(400, 401, 403, 404) },
        validate: { params: orgParams, query: listQuerySchema },
        response: { schema: pageSchema(S.inviteResponse, 'InviteList') },
      },
      handler: (request) => invites.list(paramsOf(request).org_id, queryOf<ListQuery>(request)),
    },
    {
      method: 'DELETE',
      path: '/orgs/{org_id}/invites/{invite_id}',
      options: {
        id: 'revokeInvite',
        tags,
        description: 'Revoke an invite (members:write); 409 once accepted',
        plugins: { ...requires('members:write', 'org'), ...docs(204, 400, 401, 403, 404, 409) },
        validate: { params: orgParams.keys({ invite_id: S.inviteId.required() }) },
      },
      handler: async (request, h) => {
        const { org_id, invite_id } = paramsOf(request);
        await invites.revoke(org_id, invite_id);
        return h.response().code(204);
      },
    },
    {
      method: 'POST',
      path: '/auth/request-access',
      options: {
        id: 'requestAccess',
        auth: false,
        tags,
        payload: SMALL_PAYLOAD,
        description: 'Ask to join an org with an e-mail and an SSH or hex nostr public key; keep the id to check the status',
        plugins: docs(400, 404, 409, 429),
        validate: { payload: S.accessRequestCreate },
        response: { status: { 201: S.accessRequestResponse } },
      },
      handler: async (request, h) => h.response(await requests.create(payloadOf<AccessRequestInput>(request))).code(201),
    },
    {
      method: 'GET',
      path: '/auth/request-access/{request_id}',
      options: {
        id: 'getAccessRequestStatus',
        auth: false,
        tags,
        description: 'Status of an access request (pending, approved, rejected with a reason)',
        plugins: docs(400, 404),
        validate: { params: Joi.object({ request_id: S.accessRequestId.required() }) },
        response: { schema: S.accessRequestStatus },
      },
      handler: (request) => requests.status(paramsOf(request).request_id),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/access-requests',
      options: {
        id: 'listAccessRequests',
        tags,
        description: "The org's access requests, newest first (members:write); filter by status",
        plugins: { ...requires('members:write', 'org'), ...docs(400, 401, 403, 404) },
        validate: { params: orgParams, query: listQuerySchema.keys({ status: Joi.string().valid('pending', 'approved', 'rejected') }) },
        response: { schema: pageSchema(S.accessRequestResponse, 'AccessRequestList') },
      },
      handler: (request) => {
        const query = queryOf<ListQuery & { status?: AccessRequestStatus }>(request);
        return requests.list(paramsOf(request).org_id, query, query.status);
      },
    },
    {
      method: 'POST',
      path: '/orgs/{org_id}/access-requests/{request_id}/approve',
      options: {
        id: 'approveAccessRequest',
        tags,
        description: 'Approve: account, key and membership in one transaction (members:write); approving again is a no-op',
        plugins: { ...requires('members:write', 'org'), ...docs(400, 401, 403, 404, 409) },
        validate: { params: orgParams.keys({ request_id: S.accessRequestId.required() }), payload: S.approveRequest.allow(null) },
        response: { schema: S.accessRequestResponse },
      },
      handler: (request) => {
        const { org_id, request_id } = paramsOf(request);
        const role: RoleName = payloadOf<{ role?: RoleName } | null>(request)?.role ?? 'member';
        return requests.approve(org_id, request_id, role, actorOf(request));
      },
    },
    {
      method: 'POST',
      path: '/orgs/{org_id}/access-requests/{request_id}/reject',
      options: {
        id: 'rejectAccessRequest',
        tags,
        description: 'Reject with a reason (members:write); 409 once approved',
        plugins: { ...requires('members:write', 'org'), ...docs(400, 401, 403, 404, 409) },
        validate: { params: orgParams.keys({ request_id: S.accessRequestId.required() }), payload: S.rejectRequest },
        response: { schema: S.accessRequestResponse },
      },
      handler: (request) => {
        const { org_id, request_id } = paramsOf(request);
        return requests.reject(org_id, request_id, payloadOf<{ reason: string }>(request).reason, actorOf(request));
      },
    },
  ];
}
