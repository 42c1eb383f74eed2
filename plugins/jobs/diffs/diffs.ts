import type { AttemptDiff, DiffFile } from '../../../core/ports/attempts.ts';
import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { NotFound } from '../../../core/errors.ts';
import { Claims } from '../claims/claims.ts';
import { AttemptRepository } from '../attempts/attempts.ts';
import { DiffStore } from './diff-store.ts';

export type DiffFormat = 'patch' | 'stat';
export const DIFF_FORMATS: DiffFormat[] = ['patch', 'stat'];

/** GET /jobs/{job_id}/attempts/{attempt_number}/diff. */
export interface DiffView {
  job_id: string;
  attempt_id: string;
  attempt_number: number;
  format: DiffFormat;
  base_sha: string;
  head_sha: string | null;
  uncommitted: boolean;
  stats: { files: number; additions: number; deletions: number };
  files: DiffFile[];
  /** format patch only. */
  patch?: string;
  truncated: boolean;
  note: string | null;
  patch_bytes: number;
  omitted_bytes: number;
  limits: { max_patch_bytes: number; max_files: number };
  recorded_at: Date;
}

/** `1048576 bytes` as `1.0 MiB`; small sizes in bytes. */
export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} byte${bytes === 1 ? '' : 's'}`;
  const units = ['KiB', 'MiB', 'GiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** What an attempt changed (docs/diffs.md): recorded by its worker under the lease, read per attempt. */
@injectable()
export class AttemptDiffs {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Claims) private readonly claims: Claims,
    @inject(AttemptRepository) private readonly attempts: AttemptRepository,
    @inject(DiffStore) private readonly store: DiffStore,
  ) {}

  /** Stores the diff of a running attempt under its live lease (LeaseLost otherwise, nothing written); a second one is ignored. */
  async record(jobId: string, attemptId: string, leaseToken: string, diff: AttemptDiff): Promise<void> {
    await this.db.transaction(async (trx) => {
      await this.claims.fence(jobId, attemptId, leaseToken, trx);
      await this.store.put(jobId, attemptId, diff, trx);
    });
  }

  /** The diff of attempt `attemptNumber` of the job; 404 naming why when there is none. */
  async ofAttempt(jobId: string, attemptNumber: number, format: DiffFormat): Promise<DiffView> {
    const attempt = await this.attempts.byNumber(jobId, attemptNumber);
    if (!attempt) throw new NotFound(`attempt ${attemptNumber} of job ${jobId} not found`);
    const diff = await this.store.ofAttempt(attempt.id, format === 'patch');
    const which = `attempt ${attemptNumber} of job ${jobId}`;
    if (!diff) {
      if (attempt.status === 'running') throw new NotFound(`${which} has no diff yet: it is still running (its worker records the diff when it ends)`);
      if (!attempt.git)
        throw new NotFound(`${which} has no diff: it had no checkout (its project has no repo_url, it ended before cloning, or a runner outside svc ran it)`);
      throw new NotFound(`${which} has no diff: its worker did not record one (the attempt's log says why)`);
    }
    return view(diff, attempt.attempt_number, format);
  }
}

function view(diff: AttemptDiff & { attempt_id: string; job_id: string; created_at: Date }, attemptNumber: number, format: DiffFormat): DiffView {
  const kept = Buffer.byteLength(diff.patch);
  const omitted = diff.patch_truncated ? Math.max(0, diff.patch_bytes - kept) : 0;
  const filesCut = diff.files.length < diff.files_total;
  const notes: string[] = [];
  if (format === 'patch' && diff.patch_truncated) {
    notes.push(
      diff.max_patch_bytes === 0
        ? 'no patch text is kept on this server (worker.diff.max_patch_bytes is 0)'
        : `the patch is cut at ${size(diff.max_patch_bytes)} (worker.diff.max_patch_bytes), after its last whole line: ${size(omitted)} of ${size(diff.patch_bytes)} left out`,
    );
  }
  if (filesCut) notes.push(`${diff.files.length} of ${diff.files_total} files are listed (worker.diff.max_files); the stats count every file`);
  else if (notes.length) notes.push('every file is listed with its counts');
  return {
    job_id: diff.job_id,
    attempt_id: diff.attempt_id,
    attempt_number: attemptNumber,
    format,
    base_sha: diff.base_sha,
    head_sha: diff.head_sha,
    uncommitted: diff.uncommitted,
    stats: { files: diff.files_total, additions: diff.additions, deletions: diff.deletions },
    files: diff.files,
    ...(format === 'patch' ? { patch: diff.patch } : {}),
    truncated: filesCut || (format === 'patch' && diff.patch_truncated),
    note: notes.length ? notes.join('; ') : null,
    patch_bytes: diff.patch_bytes,
    omitted_bytes: omitted,
    limits: { max_patch_bytes: diff.max_patch_bytes, max_files: diff.max_files },
    recorded_at: diff.created_at,
  };
}
