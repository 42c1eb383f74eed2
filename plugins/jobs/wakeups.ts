import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { afterCommit } from '../../core/db/after-commit.ts';
import type { Phase } from './schemas.ts';

/** The channel claimers LISTEN on. */
export const WAKE_CHANNEL = 'svc_jobs';

/** A job entering one of these may make work claimable: itself (ready) or its dependents (done, cancelled). */
const WAKING_PHASES: ReadonlySet<Phase> = new Set(['ready', 'done', 'cancelled']);

export const wakes = (phase: Phase): boolean => WAKING_PHASES.has(phase);

/**
 * Tells every claimer that a job may have become claimable, once the change is committed.
 *
 * A NOTIFY inside the writing transaction would take PostgreSQL's notify lock at commit and hold
 * it through the WAL flush, so every job write would commit one at a time. Instead the notice goes
 * out after commit, coalesced: one NOTIFY in flight at a time, and one more afterwards for all that
 * committed meanwhile. A notice lost to a crash between commit and NOTIFY is covered by the
 * claimers' one-second poll.
 */
@injectable()
export class JobWakeups {
  private sending = false;
  private again = false;
  /** Claimers in this process hear at once, without the NOTIFY round trip. */
  private readonly local = new Set<() => void>();

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Logger) private readonly logger: Logger,
  ) {}

  /** Notifies when `db` commits: at once outside a transaction, else when the outermost transaction commits. */
  afterCommit(db: Db): void {
    afterCommit(db, () => this.notify());
  }

  /** Calls `listener` on every wake-up this process sends; returns the way to stop. */
  onWake(listener: () => void): () => void {
    this.local.add(listener);
    return () => this.local.delete(listener);
  }

  notify(): void {
    for (const listener of this.local) listener();
    if (this.sending) {
      this.again = true;
      return;
    }
    this.sending = true;
    this.db
      .raw(`NOTIFY ${WAKE_CHANNEL}`)
      .catch((err) => this.logger.warn({ err }, 'job wake-up NOTIFY failed; claimers will find the work at their next poll'))
      .finally(() => {
        this.sending = false;
        if (this.again) {
          this.again = false;
          this.notify();
        }
      });
  }
}
