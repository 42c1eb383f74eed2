import type { Db } from './knex.ts';

/** What one table keeps: rows in one of `statuses` whose `at` is older than `days` go (0 days: none go). */
export interface Retention {
  table: string;
  /** The timestamp column the age is counted from. */
  at: string;
  statuses: string[];
  days: number;
}

/** Rows per statement; a run stops after MAX_ROWS so housekeeping never holds the database for long. */
const BATCH = 5_000;
const MAX_ROWS = 50_000;

/**
 * Deletes what a table no longer keeps, in short statements (rows another process has locked are
 * skipped and go on a later run). Returns how many rows went; a backlog drains over several runs.
 */
export async function prune(db: Db, r: Retention): Promise<number> {
  if (r.days <= 0) return 0;
  let deleted = 0;
  while (deleted < MAX_ROWS) {
    const { rowCount } = await db.raw(
      `DELETE FROM ?? WHERE id IN (
         SELECT id FROM ?? WHERE ?? < now() - make_interval(days => ?) AND status = ANY(?) LIMIT ? FOR UPDATE SKIP LOCKED)`,
      [r.table, r.table, r.at, r.days, r.statuses, BATCH],
    );
    deleted += rowCount ?? 0;
    if ((rowCount ?? 0) < BATCH) break;
  }
  return deleted;
}
