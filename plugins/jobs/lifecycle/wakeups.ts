import type { Logger } from 'pino';
import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { Notifier } from '../../../core/db/notify.ts';
import type { Phase } from '../job/schemas.ts';

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
export class JobWakeups extends Notifier {
  constructor(@inject(Tokens.Db) db: Db, @inject(Tokens.Logger) logger: Logger) {
    super(db, WAKE_CHANNEL, logger);
  }
}
