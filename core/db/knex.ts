import knex, { type Knex } from 'knex';
import pg from 'pg';

// Return bigint/count columns as numbers and timestamps as Date (serialized to ISO 8601 by JSON).
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

export type Db = Knex;

export function createKnex(url: string, poolMax: number): Db {
  return knex({
    client: 'pg',
    connection: url,
    pool: { min: 0, max: poolMax },
    acquireConnectionTimeout: 10_000,
  });
}
