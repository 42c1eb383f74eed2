import knex, { type Knex } from 'knex';
import pg from 'pg';
import type { Logger } from 'pino';

// Return bigint/count columns as numbers and timestamps as Date (serialized to ISO 8601 by JSON).
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

export type Db = Knex;

/** knex over pg; knex's own warnings (lost connections and the like) go to our logger. */
export function createKnex(url: string, poolMax: number, logger: Logger): Db {
  const log = (level: 'warn' | 'error' | 'debug') => (message: unknown) => logger[level]({ component: 'knex' }, String(message));
  return knex({
    log: { warn: log('warn'), error: log('error'), deprecate: log('warn'), debug: log('debug') },
    client: 'pg',
    connection: url,
    pool: { min: 0, max: poolMax },
    acquireConnectionTimeout: 10_000,
  });
}
