import type { DomainPlugin } from '../../core/http/plugins.ts';
import { Tokens } from '../../core/tokens.ts';
import { Notifier } from '../../core/db/notify.ts';
import { EVENTS_CHANNEL, attachEventRouting, attachEventWakeups, eventWakeupsOf } from '../../core/events/wakeups.ts';
import { Housekeeping, RoleServices } from '../../core/roles.ts';
import { prune } from '../../core/db/prune.ts';
import { SchedulerToken } from '../../core/ports/scheduler.ts';
import { ManifestSyncListeners } from '../../core/ports/manifest.ts';
import { EventLogSlotToken } from '../../core/ports/events.ts';
import { EventRepository } from './repository.ts';
import { EventLogReader } from './log.ts';
import { EventService } from './service.ts';
import { EventRouter, EventWakeups } from './router.ts';
import { CRON_JOB, CronSync, SCHEDULES_CHANNEL } from './cron-sync.ts';
import { ScheduleRequests, Schedules } from './schedules.ts';
import { eventRoutes } from './routes.ts';
import { scheduleRoutes } from './schedule-routes.ts';
import { describeTags } from '../../core/http/openapi.ts';

/**
 * The event spine's API and its consumers: event routes, the orchestrator's event router (events
 * → manifest triggers → pipeline runs and workflow jobs), project schedules, and the cron
 * schedules of manifest triggers kept in the orchestrators' scheduler.
 */
export const plugin: DomainPlugin = {
  name: 'events',
  dependencies: ['projects', 'manifest', 'jobs', 'pipelines'],
  register(server, { container }) {
    describeTags(server, {
      events:
        'The event spine: events emitted in a project (by clients, integrations, schedules and svc itself), what each one triggered, and cron schedules that emit events.',
    });
    const db = container.resolve(Tokens.Db);
    const logger = container.resolve(Tokens.Logger);
    // Another plugin that reacts to events (webhooks) may have attached the notifier first.
    if (!eventWakeupsOf(db)) attachEventWakeups(db, new Notifier(db, EVENTS_CHANNEL, logger));
    container.registerInstance(EventWakeups, eventWakeupsOf(db)!);
    const resync = new Notifier(db, SCHEDULES_CHANNEL, logger);
    container.registerInstance(ScheduleRequests, resync);
    for (const cls of [EventRepository, EventService, Schedules, EventRouter]) container.registerSingleton(cls as never);
    // Every process queues the events it stores for routing (core/events/emit.ts); the orchestrators route them.
    const router = container.resolve(EventRouter);
    // Both pools write events (claims and attempt ends go through the control pool).
    for (const pool of [db, container.resolve(Tokens.ControlDb)]) {
      attachEventRouting(pool, (eventId, trx) => router.enqueue(eventId, trx));
      if (!eventWakeupsOf(pool)) attachEventWakeups(pool, eventWakeupsOf(db)!);
    }
    container.resolve(EventLogSlotToken).fill(container.resolve(EventLogReader));
    container.resolve(ManifestSyncListeners).add((manifest) => resync.notify(manifest.project_id));

    const { retention } = container.resolve(Tokens.Config);
    container
      .resolve(Housekeeping)
      .add(async () => void (await prune(db, { table: 'events', at: 'created_at', statuses: ['completed', 'failed'], days: retention.events_days })));

    const roles = container.resolve(RoleServices);
    roles.add('orchestrator', router);
    if (container.isRegistered(SchedulerToken)) {
      const scheduler = container.resolve(SchedulerToken);
      const cron = container.resolve(CronSync);
      scheduler.define(CRON_JOB, cron.fire);
      roles.add('orchestrator', cron);
    }
    server.route(eventRoutes(container));
    server.route(scheduleRoutes(container));
  },
};
