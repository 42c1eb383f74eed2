import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { inject, injectable } from '../di.ts';
import { Tokens } from '../tokens.ts';
import type { Db } from '../db/knex.ts';
import { afterCommit } from '../db/after-commit.ts';
import { Notifier } from '../db/notify.ts';
import { Memo } from '../memo.ts';

/** The channel on which a process tells the others that who may do what has changed. */
export const AUTH_CHANNEL = 'svc_auth';
/** A write to a table the memos are read from, as knex or a hand-written statement spells it. */
const CACHED_TABLE_WRITE =
  /^\s*(?:insert\s+into|update|delete\s+from)\s+"?(?:users|org_members|project_members|access_bindings|access_groups|access_group_members|access_roles|service_accounts|service_account_tokens)"?[\s(]/i;

/**
 * A write that may end a job attempt (its status set, or its row gone with its job, project or org)
 * as knex or a hand-written statement spells it: such writes made outside JobLifecycle (a test, a
 * script) through this pool forget the running attempts too. Matching too much only costs a read.
 */
const ATTEMPT_WRITE = /^\s*(?:update\s+"?job_attempts"?\s+set\b[\s\S]*\bstatus\b|delete\s+from\s+"?(?:job_attempts|jobs|projects|orgs)"?[\s(])/i;
/** Notices that name one ended attempt: the rest of a notice is a process's instance, a change to everything. */
const ATTEMPT_NOTICE = 'attempt:';

/**
 * What authentication and authorization would otherwise read on every request, remembered per
 * process: the user behind a token, a service-account token's row, a caller's grants on an org or
 * project, a job's project. Whatever writes users' admin flag, memberships, role bindings, groups,
 * custom roles, service accounts or their tokens calls `changed(db)`: once that commits, every memo
 * here is emptied at once, and a NOTIFY on svc_auth empties those of the other processes (as soon as
 * it arrives, typically within a millisecond). Coarse on purpose: such changes are rare, reads are not.
 * A write to those tables that bypasses the services but goes through this process's pool (an
 * operator's script, a test) empties the memos too, when it is sent and when it returns.
 */
@injectable()
export class AuthCache {
  /** Bumped on every change: a load that started before it is not remembered. */
  generation = 0;
  private readonly instance = randomUUID().slice(0, 8);
  private readonly memos: Memo<unknown>[] = [];
  /**
   * The job attempts known to be running (job tokens are valid while theirs runs). An attempt ends
   * in JobLifecycle.endAttempt, which calls `attemptEnded`: forgotten here at its commit, and in the
   * other processes when the notice naming it arrives. Other changes leave it alone.
   */
  readonly runningAttempts = new Memo<true>(this);
  private readonly notifier: Notifier;

  constructor(@inject(Tokens.Db) db: Db, @inject(Tokens.Logger) logger: Logger) {
    this.notifier = new Notifier(db, AUTH_CHANNEL, logger);
    const onWrite = (query: { sql?: string }) => {
      if (!query.sql) return;
      if (CACHED_TABLE_WRITE.test(query.sql)) this.clear();
      if (ATTEMPT_WRITE.test(query.sql)) this.forgetAttempts();
    };
    db.on('query', onWrite);
    db.on('query-response', (_response: unknown, query: { sql?: string }) => onWrite(query));
  }

  memo<V>(): Memo<V> {
    const memo = new Memo<V>(this);
    this.memos.push(memo as Memo<unknown>);
    return memo;
  }

  /** Call where the change is written: it counts once `db` commits (at once outside a transaction). */
  changed(db: Db): void {
    afterCommit(db, () => {
      this.clear();
      this.notifier.notify(this.instance);
    });
  }

  /** A job attempt ends in `db`: once that commits, its job token stops here at once and in the other processes at the notice. */
  attemptEnded(db: Db, attemptId: string): void {
    afterCommit(db, () => {
      this.runningAttempts.forget(attemptId);
      this.notifier.notify(`${ATTEMPT_NOTICE}${attemptId}`);
    });
  }

  /**
   * A notice on svc_auth (the kernel LISTENs for it: core/kernel.ts). It holds space-separated
   * parts (see Notifier): instances that changed everything, attempts that ended; an empty one (a
   * reconnect, which may have missed some) empties the memos.
   */
  hear(payload: string): void {
    for (const part of payload.split(' ')) {
      if (part.startsWith(ATTEMPT_NOTICE)) this.runningAttempts.forget(part.slice(ATTEMPT_NOTICE.length));
      else if (part !== this.instance) this.clear(); // our own is already applied
    }
  }

  private clear(): void {
    for (const memo of this.memos) memo.clear();
    this.runningAttempts.clear();
  }

  private forgetAttempts(): void {
    this.runningAttempts.clear();
  }
}
