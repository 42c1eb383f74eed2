import type { Db } from '../db/knex.ts';

export type WorkStatus = 'queued' | 'running' | 'done' | 'dead' | 'cancelled';

export interface WorkItem {
  id: string;
  queue: string;
  key: string;
  payload: Record<string, unknown>;
  status: WorkStatus;
  attempts: number;
  max_attempts: number;
  run_at: Date;
  lease_token: string | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  cancel_requested: boolean;
  last_error: string | null;
  created_at: Date;
  finished_at: Date | null;
}

/** What its owner holds while an item runs: the token every write of the owner names. */
export interface Held {
  id: string;
  token: string;
}

export interface NewItem {
  queue: string;
  key: string;
  payload: Record<string, unknown>;
  maxAttempts: number;
  /** Leased to this owner at once (the accepting process runs it), else queued for any claimer. */
  owner?: string;
  leaseMs: number;
  /** A queued item is not claimed before this (default now). */
  runAt?: Date;
}

/** How a held item ends in a batch (`settle`): done, cancelled or dead, or back to the queue after `delayMs`. */
export interface Settled {
  held: Held;
  status: 'done' | 'cancelled' | 'dead' | 'queued';
  delayMs: number;
  error: string | null;
}

const MAX_ERROR = 2_000;
const leaseFor = (ms: number) => `${Math.max(1, Math.round(ms))} milliseconds`;

/** The `work_items` table (migrations/043_work_items.ts): SQL only; the rules are in queue.ts and engine.ts. */
export class WorkRepository {
  constructor(private readonly db: Db) {}

  async insert(item: NewItem, db: Db = this.db): Promise<WorkItem> {
    const leased = item.owner !== undefined;
    const [row] = await db('work_items')
      .insert({
        queue: item.queue,
        key: item.key,
        payload: JSON.stringify(item.payload),
        max_attempts: item.maxAttempts,
        status: leased ? 'running' : 'queued',
        attempts: leased ? 1 : 0,
        lease_owner: item.owner ?? null,
        lease_token: leased ? db.raw('gen_random_uuid()') : null,
        lease_expires_at: leased ? db.raw(`now() + ?::interval`, [leaseFor(item.leaseMs)]) : null,
        ...(item.runAt && !leased ? { run_at: item.runAt } : {}),
      })
      .returning('*');
    return row;
  }

  /** Several items of one queue in one statement (answered in no set order): those with `owner` leased to it at once. */
  async insertMany(queue: string, items: Omit<NewItem, 'queue'>[], db: Db = this.db): Promise<WorkItem[]> {
    if (items.length === 0) return [];
    const { rows } = await db.raw<{ rows: WorkItem[] }>(
      `INSERT INTO work_items (queue, key, payload, max_attempts, status, attempts, lease_owner, lease_token, lease_expires_at)
       SELECT ?, r.key, r.payload, r.max_attempts, CASE WHEN r.owner IS NULL THEN 'queued' ELSE 'running' END,
              CASE WHEN r.owner IS NULL THEN 0 ELSE 1 END, r.owner, CASE WHEN r.owner IS NULL THEN NULL ELSE gen_random_uuid() END,
              CASE WHEN r.owner IS NULL THEN NULL ELSE now() + make_interval(secs => r.lease_ms / 1000.0) END
       FROM jsonb_to_recordset(?::jsonb) AS r(key text, payload jsonb, max_attempts int, owner text, lease_ms int)
       RETURNING *`,
      [queue, JSON.stringify(items.map((i) => ({ key: i.key, payload: i.payload, max_attempts: i.maxAttempts, owner: i.owner ?? null, lease_ms: i.leaseMs })))],
    );
    return rows;
  }

  /** Queues the keys of `queue` that have no item (of any status) yet; answers those it queued. */
  async insertMissing(queue: string, keys: string[], maxAttempts: number, db: Db = this.db): Promise<string[]> {
    if (keys.length === 0) return [];
    const { rows } = await db.raw<{ rows: { key: string }[] }>(
      `INSERT INTO work_items (queue, key, payload, max_attempts, status) SELECT ?, k, '{}', ?, 'queued' FROM unnest(?::text[]) AS k
       ON CONFLICT (queue, key) DO NOTHING RETURNING key`,
      [queue, maxAttempts, keys],
    );
    return rows.map((r) => r.key);
  }

  byKey(queue: string, key: string, db: Db = this.db): Promise<WorkItem | undefined> {
    return db('work_items').where({ queue, key }).first();
  }

  /**
   * Leases up to `limit` due items of `queue` to `owner`, oldest due first; rows another claimer holds
   * locked are skipped (SKIP LOCKED), so any number of claimers never take the same item.
   */
  async claim(queue: string, owner: string, limit: number, leaseMs: number): Promise<WorkItem[]> {
    const { rows } = await this.db.raw<{ rows: WorkItem[] }>(
      `WITH picked AS (
         SELECT id FROM work_items WHERE queue = ? AND status = 'queued' AND run_at <= now()
         ORDER BY run_at, id LIMIT ? FOR UPDATE SKIP LOCKED)
       UPDATE work_items w SET status = 'running', attempts = w.attempts + 1, lease_owner = ?, lease_token = gen_random_uuid(),
         lease_expires_at = now() + ?::interval
       FROM picked WHERE w.id = picked.id RETURNING w.*`,
      [queue, limit, owner, leaseFor(leaseMs)],
    );
    return rows;
  }

  /** Extends a lease still held; null when it is not (reaped, ended), else whether a cancel was asked for. */
  async heartbeat(held: Held, leaseMs: number): Promise<{ cancel: boolean } | null> {
    const [row] = await this.db('work_items')
      .where({ id: held.id, lease_token: held.token, status: 'running' })
      .update({ lease_expires_at: this.db.raw('now() + ?::interval', [leaseFor(leaseMs)]) })
      .returning(['cancel_requested']);
    return row ? { cancel: row.cancel_requested } : null;
  }

  /**
   * Locks the item for the rest of `trx` if `held` still holds it: the fence a domain's final writes
   * stand behind (the reaper cannot take it meanwhile, and a stale owner's transaction learns so here).
   */
  async holds(held: Held, trx: Db): Promise<boolean> {
    const row = await trx('work_items').where({ id: held.id, lease_token: held.token, status: 'running' }).forUpdate().first('id');
    return row !== undefined;
  }

  /** Ends a held item (done, cancelled, dead); false when the lease is no longer held: nothing changed. */
  async end(held: Held, status: 'done' | 'cancelled' | 'dead', error: string | null, db: Db = this.db): Promise<boolean> {
    const n = await db('work_items')
      .where({ id: held.id, lease_token: held.token, status: 'running' })
      .update({ status, ...cleared(), last_error: error?.slice(0, MAX_ERROR) ?? null, finished_at: db.fn.now() });
    return n > 0;
  }

  /**
   * Ends or requeues many held items in `trx` with one statement, and locks them for the rest of it
   * (the reaper cannot take them meanwhile): the batched fence. Returns the ids still held; the
   * others' owners lost their lease, and the caller writes nothing for them.
   */
  async settle(trx: Db, items: Settled[]): Promise<Set<string>> {
    if (items.length === 0) return new Set();
    const values = items.map((i) => ({
      id: i.held.id,
      token: i.held.token,
      status: i.status,
      delay_ms: i.delayMs,
      error: i.error?.slice(0, MAX_ERROR) ?? null,
    }));
    const { rows } = await trx.raw<{ rows: { id: string }[] }>(
      `UPDATE work_items w SET status = r.status, lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL, last_error = r.error,
         run_at = CASE WHEN r.status = 'queued' THEN now() + make_interval(secs => r.delay_ms / 1000.0) ELSE w.run_at END,
         finished_at = CASE WHEN r.status = 'queued' THEN NULL ELSE now() END
       FROM jsonb_to_recordset(?::jsonb) AS r(id bigint, token uuid, status text, delay_ms int, error text)
       WHERE w.id = r.id AND w.lease_token = r.token AND w.status = 'running'
       RETURNING w.id`,
      [JSON.stringify(values)],
    );
    return new Set(rows.map((r) => String(r.id)));
  }

  /** Back to the queue after `delayMs`: false when the lease is no longer held. */
  async requeue(held: Held, delayMs: number, error: string, db: Db = this.db): Promise<boolean> {
    const n = await db('work_items')
      .where({ id: held.id, lease_token: held.token, status: 'running' })
      .update({ status: 'queued', ...cleared(), last_error: error.slice(0, MAX_ERROR), run_at: db.raw('now() + ?::interval', [leaseFor(delayMs)]) });
    return n > 0;
  }

  /** Items of `queue` whose lease ran out (their owner died or stalled), locked for `trx`; others' locked rows skipped. */
  expired(queue: string, limit: number, trx: Db): Promise<WorkItem[]> {
    return trx('work_items')
      .where({ queue, status: 'running' })
      .where('lease_expires_at', '<', trx.fn.now())
      .orderBy('lease_expires_at')
      .limit(limit)
      .forUpdate()
      .skipLocked();
  }

  /** A queued item ends cancelled at once; a running one is asked to stop (its owner hears at its next beat). */
  async cancel(queue: string, key: string, trx: Db): Promise<'cancelled' | 'requested' | null> {
    const row: WorkItem | undefined = await trx('work_items').where({ queue, key }).whereIn('status', ['queued', 'running']).forUpdate().first();
    if (!row) return null;
    if (row.status === 'queued') {
      await trx('work_items').where({ id: row.id }).update({ status: 'cancelled', finished_at: trx.fn.now() });
      return 'cancelled';
    }
    await trx('work_items').where({ id: row.id }).update({ cancel_requested: true });
    return 'requested';
  }

  /** How many items each queue has in each live or dead status: the metrics' gauge. */
  async counts(): Promise<{ queue: string; status: WorkStatus; n: number }[]> {
    const { rows } = await this.db.raw<{ rows: { queue: string; status: WorkStatus; n: string }[] }>(
      `SELECT queue, status, count(*) AS n FROM work_items WHERE status IN ('queued', 'running', 'dead') GROUP BY queue, status`,
    );
    return rows.map((r) => ({ ...r, n: Number(r.n) }));
  }

  /** Removes items done or cancelled before `before`, and dead letters that ended before `deadBefore` (retention). */
  prune(before: Date, deadBefore: Date): Promise<number> {
    return this.db('work_items')
      .where((q) =>
        q
          .where((ended) => ended.whereIn('status', ['done', 'cancelled']).where('finished_at', '<', before))
          .orWhere((dead) => dead.where('status', 'dead').where('finished_at', '<', deadBefore)),
      )
      .delete();
  }
}

const cleared = () => ({ lease_token: null, lease_owner: null, lease_expires_at: null });
