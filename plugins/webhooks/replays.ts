import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { DeliveryRepository } from './deliveries.ts';
import { withCode, windowInvalid } from './errors.ts';
import { subscriptionMatches } from './matching.ts';
import { ReplayRepository, type ReplayRow } from './replay-repository.ts';
import { OrgEvents, type WindowEvent } from './org-events.ts';
import { SubscriptionRepository } from './repository.ts';
import { WebhookDispatcher } from './dispatcher.ts';

export const MAX_RUNNING_REPLAYS = 3;

export interface ReplayRequest {
  from_event: string;
  to?: Date;
  max_events: number;
  dry_run: boolean;
}

export type ReplayView = Omit<ReplayRow, 'to_time'> & { to: Date; progress: { pending: number; succeeded: number; failed: number } };

/**
 * Replays re-send a window of past events to one subscription. An event the subscription already
 * received, or has in flight, is skipped (dedupe per subscription and event), so overlapping
 * replays never send anything twice. A replay runs until its deliveries are finished.
 */
@injectable()
export class Replays {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(SubscriptionRepository) private readonly subscriptions: SubscriptionRepository,
    @inject(DeliveryRepository) private readonly deliveries: DeliveryRepository,
    @inject(ReplayRepository) private readonly replays: ReplayRepository,
    @inject(WebhookDispatcher) private readonly dispatcher: WebhookDispatcher,
    @inject(OrgEvents) private readonly events: OrgEvents,
  ) {}

  async create(principal: Principal, orgId: string, subscriptionId: string, req: ReplayRequest): Promise<ReplayView> {
    return this.db.transaction(async (trx) => {
      // The subscription's row lock serializes replays of it, so the running count is exact.
      const sub = await this.subscriptions.lock(subscriptionId, trx);
      if (!sub || sub.org_id !== orgId) throw Boom.notFound(`webhook ${subscriptionId} not found`);
      if (!sub.enabled) throw withCode(Boom.conflict(`webhook ${subscriptionId} is disabled; enable it before replaying`), 'resource_conflict');
      const from = await this.events.inScope(trx, req.from_event, { orgId: sub.org_id, projectId: sub.project_id });
      if (!from) throw windowInvalid(`from_event ${req.from_event} is not an event of this webhook's ${sub.project_id ? 'project' : 'org'}`);
      const to = req.to ?? new Date();
      if (to.getTime() < from.created_at.getTime()) throw windowInvalid(`to (${to.toISOString()}) is before from_event (${from.created_at.toISOString()})`);
      if (!req.dry_run && (await this.replays.running(trx, sub.id)) >= MAX_RUNNING_REPLAYS) {
        throw withCode(Boom.conflict(`${MAX_RUNNING_REPLAYS} replays of webhook ${sub.id} are still running; wait for one to finish`), 'resource_conflict');
      }

      const matched: WindowEvent[] = [];
      await this.events.scan(trx, { orgId: sub.org_id, projectId: sub.project_id }, from.id, to, (page) => {
        for (const event of page) {
          if (subscriptionMatches(sub, event)) matched.push(event);
          if (matched.length >= req.max_events) return false;
        }
        return true;
      });
      const fresh = new Set(
        await this.replays.undelivered(
          trx,
          sub.id,
          matched.map((e) => e.id),
        ),
      );
      const id = newId('rpl');
      const sending = !req.dry_run && fresh.size > 0;
      await this.replays.insert(trx, {
        id,
        subscription_id: sub.id,
        from_event: from.id,
        to_time: to,
        max_events: req.max_events,
        dry_run: req.dry_run,
        status: sending ? 'running' : 'completed',
        events_matched: matched.length,
        events_enqueued: 0,
        events_skipped: matched.length - fresh.size,
        created_by: principal.id,
      });
      if (sending) {
        const rows = matched
          .filter((e) => fresh.has(e.id))
          .map((e) => ({
            id: newId('whd'),
            subscription_id: sub.id,
            event_id: e.id,
            event_type: e.type,
            kind: 'replay' as const,
            replay_id: id,
            dedupe_key: null,
          }));
        const written = await this.deliveries.insert(trx, rows);
        await this.dispatcher.enqueue(
          rows.filter((r) => written.has(r.id)).map((r) => r.id),
          trx,
        );
        await this.replays.setEnqueued(trx, id, written.size, matched.length - written.size);
      }
      // The replay as created: read before the commit wakes the dispatcher, which may finish it at once.
      return this.view(subscriptionId, id, trx);
    });
  }

  async get(subscriptionId: string, id: string): Promise<ReplayView> {
    await this.replays.settle(this.db, [id]);
    return this.view(subscriptionId, id, this.db);
  }

  private async view(subscriptionId: string, id: string, db: Db): Promise<ReplayView> {
    const row = await this.replays.byId(subscriptionId, id, db);
    if (!row) throw Boom.notFound(`replay ${id} not found`);
    const { to_time, ...rest } = row;
    return { ...rest, to: to_time, progress: await this.replays.progress(id, db) };
  }
}
