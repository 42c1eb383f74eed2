import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { MatchableEvent } from './matching.ts';

export interface ReplayRow {
  id: string;
  subscription_id: string;
  from_event: string;
  to_time: Date;
  max_events: number;
  dry_run: boolean;
  status: 'running' | 'completed';
  events_matched: number;
  events_enqueued: number;
  events_skipped: number;
  created_by: string | null;
  created_at: Date;
  completed_at: Date | null;
}

export type WindowEvent = MatchableEvent & { id: string };

/** Events of a subscription's scope read per page when a replay walks its window. */
const SCAN_PAGE = 1000;

@injectable()
export class ReplayRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  insert(trx: Db, row: Omit<ReplayRow, 'created_at' | 'completed_at'>): Promise<void> {
    return trx('webhook_replays').insert({ ...row, completed_at: row.status === 'completed' ? trx.fn.now() : null });
  }

  byId(subscriptionId: string, id: string): Promise<ReplayRow | undefined> {
    return this.db('webhook_replays').where({ id, subscription_id: subscriptionId }).first();
  }

  async setEnqueued(trx: Db, id: string, enqueued: number, skipped: number): Promise<void> {
    await trx('webhook_replays').where({ id }).update({ events_enqueued: enqueued, events_skipped: skipped });
  }

  /** The event's time and id when it belongs to the org (and project, when given); else undefined. */
  eventIn(trx: Db, eventId: string, orgId: string, projectId: string | null): Promise<{ id: string; created_at: Date } | undefined> {
    const q = trx('events as e').join('projects as p', 'p.id', 'e.project_id').where({ 'e.id': eventId, 'p.org_id': orgId });
    if (projectId !== null) q.where('e.project_id', projectId);
    return q.first('e.id', 'e.created_at');
  }

  /**
   * Walks the window from `fromEvent` (inclusive) to `to` in event order, passing each page to
   * `take`, until `take` answers false. Positions are compared in SQL, at the database's
   * microsecond precision, never through a JavaScript Date.
   */
  async scan(trx: Db, scope: { orgId: string; projectId: string | null }, fromEvent: string, to: Date, take: (page: WindowEvent[]) => boolean): Promise<void> {
    let after: string | null = null;
    for (;;) {
      const q = trx('events as e')
        .join('projects as p', 'p.id', 'e.project_id')
        .where('p.org_id', scope.orgId)
        .whereRaw('(e.created_at, e.id) >= (SELECT created_at, id FROM events WHERE id = ?)', [fromEvent])
        .where('e.created_at', '<=', to)
        .orderBy([{ column: 'e.created_at' }, { column: 'e.id' }])
        .limit(SCAN_PAGE)
        .select('e.id', 'e.type', 'e.project_id', 'e.payload_json as payload');
      if (scope.projectId !== null) q.where('e.project_id', scope.projectId);
      if (after !== null) q.whereRaw('(e.created_at, e.id) > (SELECT created_at, id FROM events WHERE id = ?)', [after]);
      const page: WindowEvent[] = await q;
      if (page.length === 0 || !take(page) || page.length < SCAN_PAGE) return;
      after = page[page.length - 1].id;
    }
  }

  /** Of `eventIds`, in order, those the subscription has neither received nor has in flight. */
  async undelivered(trx: Db, subscriptionId: string, eventIds: string[]): Promise<string[]> {
    if (eventIds.length === 0) return [];
    const { rows } = await trx.raw(
      `SELECT x.id FROM unnest(?::text[]) WITH ORDINALITY AS x(id, n)
       WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.subscription_id = ? AND d.event_id = x.id
                         AND d.status IN ('pending', 'retrying', 'succeeded'))
       ORDER BY x.n`,
      [eventIds, subscriptionId],
    );
    return rows.map((r: { id: string }) => r.id);
  }

  /** Marks completed the running replays among `ids` none of whose deliveries is still in flight. */
  async settle(db: Db, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await db('webhook_replays as r')
      .whereIn('r.id', ids)
      .where('r.status', 'running')
      .whereNotExists((q) => q.select(db.raw('1')).from('webhook_deliveries as d').whereRaw('d.replay_id = r.id').whereIn('d.status', ['pending', 'retrying']))
      .update({ status: 'completed', completed_at: db.fn.now() });
  }

  /** The subscription's running replays, after settling those that have finished. */
  async running(trx: Db, subscriptionId: string): Promise<number> {
    const ids: string[] = await trx('webhook_replays').where({ subscription_id: subscriptionId, status: 'running' }).pluck('id');
    await this.settle(trx, ids);
    const row = await trx('webhook_replays').where({ subscription_id: subscriptionId, status: 'running' }).count({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  /** Deliveries of the replay by state: pending (retries included), succeeded, failed. */
  async progress(id: string): Promise<{ pending: number; succeeded: number; failed: number }> {
    const rows = await this.db('webhook_deliveries').where({ replay_id: id }).groupBy('status').select('status', this.db.raw('count(*)::int AS n'));
    const count = (s: string) => rows.filter((r: { status: string }) => r.status === s).reduce((a: number, r: { n: number }) => a + r.n, 0);
    return { pending: count('pending') + count('retrying'), succeeded: count('succeeded'), failed: count('failed') };
  }
}
