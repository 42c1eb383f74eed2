import type { Db } from '../../core/db/knex.ts';
import type { HarnessReport } from '../../core/ports/harness.ts';

const TABLE = 'harness_reports';

/** Statements that change the reports (SharedMemos forgets what it remembered of them when this process runs one). */
export const REPORT_WRITES = /^\s*(?:insert\s+into|update|delete\s+from)\s+"?harness_reports"?[\s(]/i;

/** A report that still counts, and how many milliseconds it has left by the database's clock. */
export interface FreshReport {
  worker_id: string;
  harnesses: Record<string, HarnessReport>;
  ms_left: number;
}

/** Each worker's latest report of the harnesses it can run (harness_reports): SQL only. */
export class HarnessReportRepository {
  constructor(private readonly db: Db) {}

  /** Replaces the worker's report; it counts for `freshSeconds` from now. */
  async save(workerId: string, harnesses: Record<string, HarnessReport>, freshSeconds: number): Promise<void> {
    await this.db.raw(
      `INSERT INTO harness_reports (worker_id, harnesses, reported_at, expires_at)
       VALUES (?, ?::jsonb, now(), now() + make_interval(secs => ?))
       ON CONFLICT (worker_id) DO UPDATE SET harnesses = excluded.harnesses, reported_at = excluded.reported_at, expires_at = excluded.expires_at`,
      [workerId, JSON.stringify(harnesses), freshSeconds],
    );
  }

  async remove(workerId: string): Promise<void> {
    await this.db(TABLE).where({ worker_id: workerId }).delete();
  }

  /** The reports that still count. */
  async fresh(): Promise<FreshReport[]> {
    const { rows } = await this.db.raw<{ rows: FreshReport[] }>(
      `SELECT worker_id, harnesses, (extract(epoch FROM expires_at - now()) * 1000)::float8 AS ms_left
       FROM harness_reports WHERE expires_at > now()`,
    );
    return rows;
  }

  /** Rows of workers that stopped counting more than `seconds` ago (died without withdrawing). */
  async pruneExpired(seconds: number): Promise<number> {
    return this.db(TABLE)
      .where('expires_at', '<', this.db.raw('now() - make_interval(secs => ?)', [seconds]))
      .delete();
  }
}
