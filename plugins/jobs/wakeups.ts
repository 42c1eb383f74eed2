import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { Notifier } from '../../core/db/notify.ts';
import type { Phase } from './schemas.ts';

/** The channel claimers LISTEN on. */
export const WAKE_CHANNEL = 'svc_jobs';

/** A job entering one of these may make work claimable: itself (ready) or its dependents (done, cancelled). */
const WAKING_PHASES: ReadonlySet<Phase> = new Set(['ready', 'done', 'cancelled']);

export const wakes = (phase: Phase): boolean => WAKING_PHASES.has(phase);

/**
 * Tells every claimer that a job may have become claimable, once the change is committed (a
 * coalesced NOTIFY after commit: see core/db/notify.ts). A notice lost to a crash between commit
 * and NOTIFY is covered by the claimers' one-second poll.
 */
@injectable()
export class JobWakeups {
  private readonly notifier: Notifier;

  constructor(@inject(Tokens.Db) db: Db, @inject(Tokens.Logger) logger: Logger) {
    this.notifier = new Notifier(db, WAKE_CHANNEL, logger);
  }

  /** Notifies when `db` commits: at once outside a transaction, else when the outermost transaction commits. */
  afterCommit(db: Db): void {
    this.notifier.afterCommit(db);
  }

  /** Calls `listener` on every wake-up this process sends (claimers here hear without the round trip); returns the way to stop. */
  onWake(listener: () => void): () => void {
    return this.notifier.onNotice(() => listener());
  }

  notify(): void {
    this.notifier.notify();
  }
}
