import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { grantOf, principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import { SubscriptionRepository, toSubscription, type SubscriptionFilters } from './repository.ts';
import { WebhookService, type CreateInput } from './service.ts';
import { WebhookEnsure } from './ensure.ts';
import * as S from './schemas.ts';

export const tags = ['api', 'webhooks'];
const emptyBody = Joi.object({}).allow(null).label('Empty');

/** Subscriptions: create (org-wide or for one project), list, show, delete, enable. */
export function subscriptionRoutes(container: DependencyContainer): ServerRoute[] {
  const service = container.resolve(WebhookService);
  const subscriptions = container.resolve(SubscriptionRepository);
  const ensurer = container.resolve(WebhookEnsure);
  const ensured =
    'Find or create a subscription by its URL: 200 with it, created when missing or as it is when events, filter, enabled and secret match; 409 naming the fields that differ';

  return [
    {
      method: 'POST',
      path: '/orgs/{org_id}/webhooks',
      options: {
        id: 'createOrgWebhook',
        tags,
        description: 'Subscribe a URL to events of every project of the org',
        plugins: { ...requires('webhooks:write', 'org'), ...docs(400, 401, 403, 404, 422) },
        validate: { params: S.orgParams, payload: S.createSchema },
        response: { status: { 201: S.subscriptionSchema } },
      },
      handler: async (request, h) => {
        const sub = await service.create(principalOf(request), { orgId: paramsOf(request).org_id, projectId: null }, payloadOf<CreateInput>(request));
        return h.response(sub).code(201);
      },
    },
    {
      method: 'POST',
      path: '/projects/{project_id}/webhooks',
      options: {
        id: 'createProjectWebhook',
        tags,
        description: "Subscribe a URL to the project's events (a project-scoped subscription, managed under its org)",
        plugins: { ...requires('webhooks:write', 'project'), ...docs(400, 401, 403, 404, 422) },
        validate: { params: S.projectParams, payload: S.createSchema },
        response: { status: { 201: S.subscriptionSchema } },
      },
      handler: async (request, h) => {
        const scope = { orgId: grantOf(request).orgId, projectId: paramsOf(request).project_id };
        return h.response(await service.create(principalOf(request), scope, payloadOf<CreateInput>(request))).code(201);
      },
    },
    {
      method: 'POST',
      path: '/orgs/{org_id}/webhooks/ensure',
      options: {
        id: 'ensureOrgWebhook',
        tags,
        description: `${ensured} (an org-wide subscription)`,
        plugins: { ...requires('webhooks:write', 'org'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.orgParams, payload: S.createSchema },
        response: { schema: S.subscriptionSchema },
      },
      handler: async (request) =>
        (await ensurer.ensure(principalOf(request), { orgId: paramsOf(request).org_id, projectId: null }, payloadOf<CreateInput>(request))).subscription,
    },
    {
      method: 'POST',
      path: '/projects/{project_id}/webhooks/ensure',
      options: {
        id: 'ensureProjectWebhook',
        tags,
        description: `${ensured} (a project-scoped subscription)`,
        plugins: { ...requires('webhooks:write', 'project'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.projectParams, payload: S.createSchema },
        response: { schema: S.subscriptionSchema },
      },
      handler: async (request) => {
        const scope = { orgId: grantOf(request).orgId, projectId: paramsOf(request).project_id };
        return (await ensurer.ensure(principalOf(request), scope, payloadOf<CreateInput>(request))).subscription;
      },
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/webhooks',
      options: {
        id: 'listWebhooks',
        tags,
        description: "The org's webhook subscriptions (project-scoped ones included), newest first",
        plugins: { ...requires('webhooks:read', 'org'), ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: S.listQuery },
        response: { schema: pageSchema(S.subscriptionSchema, 'WebhookSubscriptionList') },
      },
      handler: (request) => subscriptions.list(paramsOf(request).org_id, queryOf<SubscriptionFilters>(request)),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/webhooks/{wh_id}',
      options: {
        id: 'getWebhook',
        tags,
        description: 'One subscription (its secret is never shown)',
        plugins: { ...requires('webhooks:read', 'webhook'), ...docs(400, 401, 403, 404) },
        validate: { params: S.webhookParams },
        response: { schema: S.subscriptionSchema },
      },
      handler: async (request) => toSubscription(await service.get(paramsOf(request).org_id, paramsOf(request).wh_id)),
    },
    {
      method: 'DELETE',
      path: '/orgs/{org_id}/webhooks/{wh_id}',
      options: {
        id: 'deleteWebhook',
        tags,
        description: 'Delete a subscription: nothing more is sent to it',
        plugins: { ...requires('webhooks:write', 'webhook'), ...docs(204, 400, 401, 403, 404) },
        validate: { params: S.webhookParams },
      },
      handler: async (request, h) => {
        await service.remove(paramsOf(request).org_id, paramsOf(request).wh_id);
        return h.response().code(204);
      },
    },
    {
      method: 'PATCH',
      path: '/orgs/{org_id}/webhooks/{wh_id}',
      options: {
        id: 'updateWebhook',
        tags,
        description:
          'Change a subscription: url (checked by the address policy), events, filter, enabled (true also resets its failure count). The scope stays; the secret changes through rotate-secret',
        plugins: { ...requires('webhooks:write', 'webhook'), ...docs(400, 401, 403, 404, 422) },
        validate: { params: S.webhookParams, payload: S.updateSchema },
        response: { schema: S.subscriptionSchema },
      },
      handler: (request) => service.update(paramsOf(request).org_id, paramsOf(request).wh_id, payloadOf(request)),
    },
    {
      method: 'POST',
      path: '/orgs/{org_id}/webhooks/{wh_id}/rotate-secret',
      options: {
        id: 'rotateWebhookSecret',
        tags,
        description: 'Replace the signing secret (never shown again): every delivery from now on, retries included, is signed with the new one',
        plugins: { ...requires('webhooks:write', 'webhook'), ...docs(400, 401, 403, 404) },
        validate: { params: S.webhookParams, payload: S.rotateSecretSchema },
        response: { schema: S.subscriptionSchema },
      },
      handler: (request) => service.rotateSecret(paramsOf(request).org_id, paramsOf(request).wh_id, payloadOf<{ secret: string }>(request).secret),
    },
    {
      method: 'PATCH',
      path: '/orgs/{org_id}/webhooks/{wh_id}/enable',
      options: {
        id: 'enableWebhook',
        tags,
        description: 'Enable a subscription (also one disabled after repeated failures); resets its failure count',
        plugins: { ...requires('webhooks:write', 'webhook'), ...docs(400, 401, 403, 404) },
        validate: { params: S.webhookParams, payload: emptyBody },
        response: { schema: S.subscriptionSchema },
      },
      handler: (request) => service.enable(paramsOf(request).org_id, paramsOf(request).wh_id),
    },
  ];
}
