import type { Metrics } from '../metrics.ts';
import type { Db } from './knex.ts';

interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  max: number;
}

/** Connections of each named pool in use, idle and waited for, and each pool's size, read from the pool when scraped. */
export function measurePools(metrics: Metrics, pools: Record<string, Db>): void {
  const poolOf = (db: Db) => (db.client as { pool?: TarnPool }).pool;
  metrics.sampledGauge('svc_db_pool_connections', 'Database connections by pool and state (used, free, pending acquires, max)', ['pool', 'state'], async () =>
    Object.entries(pools).flatMap(([name, db]) => {
      const pool = poolOf(db);
      if (!pool) return [];
      return [
        { labels: { pool: name, state: 'used' }, value: pool.numUsed() },
        { labels: { pool: name, state: 'free' }, value: pool.numFree() },
        { labels: { pool: name, state: 'pending' }, value: pool.numPendingAcquires() },
        { labels: { pool: name, state: 'max' }, value: pool.max },
      ];
    }),
  );
}
