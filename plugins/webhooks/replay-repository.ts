import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';

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

@injectable()
export class ReplayRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  insert(trx: Db, row: Omit<ReplayRow, 'created_at' | 'completed_at'>): Promise<void> {
    return trx('webhook_replays').insert({ ...row, completed_at: row.status === 'completed' ? trx.fn.now() : null });
  }

  byId(subscriptionId: string, id: string, db: Db = this.db): Promise<ReplayRow | undefined> {
    return db('webhook_replays').where({ id, subscription_id: subscriptionId }).first();
  }

  async setEnqueued(trx: Db, id: string, enqueued: number, skipped: number): Promise<void> {
    await trx('webhook_replays').where({ id }).update({ events_enqueued: enqueued, events_skipped: skipped });
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
  async progress(id: string, db: Db = this.db): Promise<{ pending: number; succeeded: number; failed: number }> {
    const rows = await db('webhook_deliveries').where({ replay_id: id }).groupBy('status').select('status', db.raw('count(*)::int AS n'));
    const count = (s: string) => rows.filter((r: { status: string }) => r.status === s).reduce((a: number, r: { n: number }) => a + r.n, 0);
    return { pending: count('pending') + count('retrying'), succeeded: count('succeeded'), failed: count('failed') };
  }
}
