import knex, { type Knex } from 'knex';
import pg from 'pg';
import type { Logger } from 'pino';

// Return bigint/count columns as numbers and timestamps as Date (serialized to ISO 8601 by JSON).
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

export type Db = Knex;

/** How long a statement waits for a free connection before it fails (and its request answers 503). */
export const ACQUIRE_TIMEOUT_MS = 10_000;

export interface Timeouts {
  /** statement_timeout of every session (0: none). */
  statementMs: number;
  /** lock_timeout of every session (0: none). */
  lockMs: number;
}

/**
 * knex over pg; knex's own warnings (lost connections and the like) go to our logger. With
 * `timeouts`, every session of the pool gets them, so a stalled statement or a lock held elsewhere
 * frees its connection instead of holding it until the pool is exhausted.
 */
export function createKnex(url: string, poolMax: number, logger: Logger, timeouts?: Timeouts): Db {
  const log = (level: 'warn' | 'error' | 'debug') => (message: unknown) => logger[level]({ component: 'knex' }, String(message));
  return knex({
    log: { warn: log('warn'), error: log('error'), deprecate: log('warn'), debug: log('debug') },
    client: 'pg',
    // pg passes statement_timeout and lock_timeout as session settings at connect (knex's types lack the latter).
    connection: timeouts ? ({ connectionString: url, statement_timeout: timeouts.statementMs, lock_timeout: timeouts.lockMs } as Knex.PgConnectionConfig) : url,
    pool: { min: 0, max: poolMax },
    acquireConnectionTimeout: ACQUIRE_TIMEOUT_MS,
  });
}
