import type { AttemptDiff, DiffFile } from '../../../core/ports/attempts.ts';
import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';

/** A diff as stored: what the worker recorded, and when. */
export type StoredDiff = AttemptDiff & { attempt_id: string; job_id: string; created_at: Date };

interface DiffRow {
  attempt_id: string;
  job_id: string;
  base_sha: string;
  head_sha: string | null;
  uncommitted: boolean;
  files: DiffFile[];
  files_total: number;
  additions: number;
  deletions: number;
  patch: string;
  patch_bytes: string | number;
  patch_truncated: boolean;
  max_patch_bytes: number;
  max_files: number;
  created_at: Date;
}

const COLUMNS_WITHOUT_PATCH = [
  'attempt_id',
  'job_id',
  'base_sha',
  'head_sha',
  'uncommitted',
  'files',
  'files_total',
  'additions',
  'deletions',
  'patch_bytes',
  'patch_truncated',
  'max_patch_bytes',
  'max_files',
  'created_at',
];

/** A file in its documented key order (jsonb keeps keys in its own). */
const inOrder = ({ path, old_path, status, additions, deletions, binary }: DiffFile): DiffFile => ({
  path,
  ...(old_path === undefined ? {} : { old_path }),
  status,
  additions,
  deletions,
  binary,
});

/** SQL for attempt_diffs: one row per attempt, written once. */
@injectable()
export class DiffStore {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  /** Inserts the attempt's diff; a second one for the same attempt is ignored (the first stands). Answers whether it was written. */
  async put(jobId: string, attemptId: string, diff: AttemptDiff, trx: Db): Promise<boolean> {
    const inserted = await trx('attempt_diffs')
      .insert({
        attempt_id: attemptId,
        job_id: jobId,
        base_sha: diff.base_sha,
        head_sha: diff.head_sha,
        uncommitted: diff.uncommitted,
        files: JSON.stringify(diff.files),
        files_total: diff.files_total,
        additions: diff.additions,
        deletions: diff.deletions,
        patch: diff.patch,
        patch_bytes: diff.patch_bytes,
        patch_truncated: diff.patch_truncated,
        max_patch_bytes: diff.max_patch_bytes,
        max_files: diff.max_files,
      })
      .onConflict('attempt_id')
      .ignore()
      .returning('attempt_id');
    return inserted.length > 0;
  }

  /** The attempt's diff; without the patch text when `withPatch` is false (a stat read never loads it). */
  async ofAttempt(attemptId: string, withPatch: boolean): Promise<StoredDiff | null> {
    const row = await this.db('attempt_diffs')
      .where({ attempt_id: attemptId })
      .first<DiffRow | undefined>(withPatch ? [...COLUMNS_WITHOUT_PATCH, 'patch'] : COLUMNS_WITHOUT_PATCH);
    return row ? { ...row, files: row.files.map(inOrder), patch: row.patch ?? '', patch_bytes: Number(row.patch_bytes) } : null;
  }
}
