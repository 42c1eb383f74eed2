import Boom from '@hapi/boom';
import type { DomainPlugin } from '../../core/http/plugins.ts';
import { AccessTargets } from '../../core/http/access.ts';
import { Notifier } from '../../core/db/notify.ts';
import { EVENTS_CHANNEL, attachEventWakeups, eventWakeupsOf } from '../../core/events/wakeups.ts';
import { Housekeeping, RoleServices } from '../../core/roles.ts';
import { prune } from '../../core/db/prune.ts';
import { Tokens } from '../../core/tokens.ts';
import { AddressGuard, guardOptions } from './address-guard.ts';
import { DeliveryRepository } from './deliveries.ts';
import { WebhookDispatcher } from './dispatcher.ts';
import { installErrorCodes } from './errors.ts';
import { ReplayRepository } from './replay-repository.ts';
import { Replays } from './replays.ts';
import { SubscriptionRepository } from './repository.ts';
import { DeliverySender } from './sender.ts';
import { WebhookService } from './service.ts';
import { Transport } from '../../core/http/guarded-post.ts';
import { subscriptionRoutes } from './routes.ts';
import { deliveryRoutes } from './delivery-routes.ts';
import { describeTags } from '../../core/http/openapi.ts';

/**
 * Outbound webhooks: subscriptions with sealed secrets, signed CloudEvents deliveries fanned out
 * from the event spine by the orchestrators on the work engine (queue `webhooks`), retries, auto-disable, replays.
 */
export const plugin: DomainPlugin = {
  name: 'webhooks',
  dependencies: ['orgs', 'projects'],
  register(server, { container }) {
    describeTags(server, {
      webhooks: 'Outbound webhooks: subscriptions that receive signed CloudEvents, their deliveries and retries, tests and replays of past events.',
    });
    const config = container.resolve(Tokens.Config);
    const db = container.resolve(Tokens.Db);
    const { webhooks } = config;
    // The outbound policy (outbound.*), with webhooks.allow_* as its older names for deliveries.
    const guard = new AddressGuard(guardOptions(config, 'webhooks'));
    const transport = new Transport(guard, webhooks.timeout_ms);
    container.registerInstance(AddressGuard, guard);
    container.registerInstance(Transport, transport);
    for (const cls of [SubscriptionRepository, DeliveryRepository, ReplayRepository, DeliverySender, WebhookDispatcher, WebhookService, Replays])
      container.registerSingleton(cls as never);
    // Without the events plugin nothing else announces new events; the poll would still find them.
    if (!eventWakeupsOf(db)) attachEventWakeups(db, new Notifier(db, EVENTS_CHANNEL, container.resolve(Tokens.Logger)));

    const days = container.resolve(Tokens.Config).retention.webhook_deliveries_days;
    container
      .resolve(Housekeeping)
      .add(async () => void (await prune(db, { table: 'webhook_deliveries', at: 'completed_at', statuses: ['succeeded', 'failed'], days })));

    // Every process queues deliveries (replays on the api role); the orchestrators send them.
    container.resolve(RoleServices).add('orchestrator', container.resolve(WebhookDispatcher));

    // /orgs/{org_id}/webhooks/{wh_id} routes act on the subscription's project when it has one, else on the org.
    const subscriptions = container.resolve(SubscriptionRepository);
    container.resolve(AccessTargets).register('webhook', async (request) => {
      const { org_id, wh_id } = request.params as Record<string, string>;
      const notFound = `webhook ${wh_id} not found`;
      const sub = await subscriptions.live(org_id, wh_id);
      if (!sub) throw Boom.notFound(notFound);
      return sub.project_id ? { project: sub.project_id, notFound } : { org: sub.org_id, notFound };
    });
    installErrorCodes(server);
    server.route([...subscriptionRoutes(container), ...deliveryRoutes(container)]);
    server.ext('onPostStop', () => transport.close());
  },
};
