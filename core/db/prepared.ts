import type { Knex } from 'knex';
import type { Db } from './knex.ts';

/** SQLSTATE feature_not_supported, as PostgreSQL answers a prepared statement whose result shape a schema change altered. */
const STALE_PLAN = '0A000';

/**
 * A statement PostgreSQL parses and plans once per connection (a named prepared statement), for the
 * hottest writes, where parsing and planning cost more than running. Not for a statement whose best
 * plan depends on a table's size: PostgreSQL soon keeps a generic plan, and one made while the table
 * was small (a sequential scan) outlives the table's growth until the next ANALYZE. It goes through
 * knex (its pool, its query events), only named. A schema change that alters what the statement answers (a
 * column added to a `SELECT *` by a newer replica's migration) makes PostgreSQL refuse the cached
 * plan; the statement is then prepared again under a new name, once per change.
 */
export class Prepared<R> {
  private generation = 0;

  constructor(
    private readonly name: string,
    private readonly sql: string,
  ) {}

  async rows(db: Db, bindings: readonly Knex.RawBinding[]): Promise<R[]> {
    try {
      return await this.run(db, bindings);
    } catch (err) {
      if ((err as { code?: unknown }).code !== STALE_PLAN || !/cached plan/.test((err as Error).message)) throw err;
      this.generation++;
      return this.run(db, bindings);
    }
  }

  private async run(db: Db, bindings: readonly Knex.RawBinding[]): Promise<R[]> {
    const { rows } = await db.raw<{ rows: R[] }>(this.sql, bindings).options({ name: `svc_${this.name}_${this.generation}` });
    return rows;
  }
}
