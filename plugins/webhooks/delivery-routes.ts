import Joi from 'joi';
import type { Request, ResponseToolkit, ServerRoute } from '@hapi/hapi';
import Boom from '@hapi/boom';
import type { DependencyContainer } from '../../core/di.ts';
import { principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import { validationFailed } from '../../core/http/server.ts';
import { DeliveryRepository, type DeliveryFilters } from './deliveries.ts';
import { withCode } from './errors.ts';
import { Replays, type ReplayRequest } from './replays.ts';
import { WebhookService } from './service.ts';
import { tags } from './routes.ts';
import * as S from './schemas.ts';

/** A 400 on a window field (from_event, to, max_events) carries the code webhook_replay_window_invalid. */
function replayValidationFailed(request: Request, h: ResponseToolkit, err?: Error): never {
  const details = (err as { details?: { path: (string | number)[] }[] } | undefined)?.details ?? [];
  try {
    validationFailed(request, h, err);
  } catch (boom) {
    if (Boom.isBoom(boom) && details.some((d) => S.WINDOW_FIELDS.includes(String(d.path[0])))) withCode(boom, 'webhook_replay_window_invalid');
    throw boom;
  }
}

/** Deliveries of a subscription, a test send, and replays. */
export function deliveryRoutes(container: DependencyContainer): ServerRoute[] {
  const service = container.resolve(WebhookService);
  const deliveries = container.resolve(DeliveryRepository);
  const replays = container.resolve(Replays);

  return [
    {
      method: 'GET',
      path: '/orgs/{org_id}/webhooks/{wh_id}/deliveries',
      options: {
        id: 'listWebhookDeliveries',
        tags,
        description: "The subscription's deliveries, newest first: status, attempts, last response, next attempt",
        plugins: { ...requires('webhooks:read', 'webhook'), ...docs(400, 401, 403, 404) },
        validate: { params: S.webhookParams, query: S.deliveriesQuery },
        response: { schema: pageSchema(S.deliverySchema, 'WebhookDeliveryList') },
      },
      handler: async (request) => {
        const sub = await service.get(paramsOf(request).org_id, paramsOf(request).wh_id);
        return deliveries.list(sub.id, queryOf<DeliveryFilters>(request));
      },
    },
    {
      method: 'POST',
      path: '/orgs/{org_id}/webhooks/{wh_id}/test',
      options: {
        id: 'testWebhook',
        tags,
        description: 'Send a webhook.test event now and answer the outcome (recorded as a delivery of kind test; never retried)',
        plugins: { ...requires('webhooks:write', 'webhook'), ...docs(400, 401, 403, 404) },
        validate: { params: S.webhookParams, payload: Joi.object({}).allow(null).label('Empty') },
        response: { schema: S.deliverySchema },
      },
      handler: (request) => service.test(paramsOf(request).org_id, paramsOf(request).wh_id),
    },
    {
      method: 'POST',
      path: '/orgs/{org_id}/webhooks/{wh_id}/replays',
      options: {
        id: 'replayWebhookEvents',
        tags,
        description: 'Re-send the events of a window (dedupe per event; at most 3 running per subscription); dry_run only counts',
        plugins: { ...requires('webhooks:write', 'webhook'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.webhookParams, payload: S.replaySchema, failAction: replayValidationFailed },
        response: { status: { 201: S.replayResponseSchema } },
      },
      handler: async (request, h) => {
        const { org_id, wh_id } = paramsOf(request);
        return h.response(await replays.create(principalOf(request), org_id, wh_id, payloadOf<ReplayRequest>(request))).code(201);
      },
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/webhooks/{wh_id}/replays/{replay_id}',
      options: {
        id: 'getWebhookReplay',
        tags,
        description: "A replay's counts and the progress of its deliveries",
        plugins: { ...requires('webhooks:read', 'webhook'), ...docs(400, 401, 403, 404) },
        validate: { params: S.replayParams },
        response: { schema: S.replayResponseSchema },
      },
      handler: async (request) => {
        const sub = await service.get(paramsOf(request).org_id, paramsOf(request).wh_id);
        return replays.get(sub.id, paramsOf(request).replay_id);
      },
    },
  ];
}
