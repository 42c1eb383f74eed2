import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { inject, injectable } from '../di.ts';
import { Tokens } from '../tokens.ts';
import type { Db } from './knex.ts';
import { afterCommit } from './after-commit.ts';
import { Notifier } from './notify.ts';
import { Memo, type Generation } from '../memo.ts';

/** The channel on which a process tells the others which remembered values changed. */
export const MEMO_CHANNEL = 'svc_memo';

/** The key a notice names when every key of a memo changed (no memo's key is a lone `*`). */
const EVERY_KEY = '*';

/** A memo's values, keyed by something without spaces (an id), and how they are said to have changed. */
export class SharedMemo<V> implements Generation {
  generation = 0;
  private readonly memo = new Memo<V>(this);

  constructor(
    readonly name: string,
    private readonly changes: (key: string) => void,
  ) {}

  /** The remembered value of `key`, else `load`'s (see Memo). */
  get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    return this.memo.get(key, load);
  }

  /** Call where the value of `key` is written: once `db` commits, it is forgotten here and then in every other process. */
  changed(db: Db, key: string): void {
    afterCommit(db, () => this.changes(key));
  }

  /** Call where a write may change any key (a value several keys were derived from): all are forgotten, here and elsewhere. */
  changedAll(db: Db): void {
    afterCommit(db, () => this.changes(EVERY_KEY));
  }

  forget(key: string): void {
    if (key === EVERY_KEY) this.memo.clear();
    else this.memo.forget(key);
  }

  clear(): void {
    this.memo.clear();
  }
}

/**
 * Values a domain reads far more often than it changes them (a project's manifest defaults, an
 * org's budget settings), remembered per process. The owner calls `changed(db, key)` where it
 * writes: once that commits, the key is forgotten here at once, and a NOTIFY on svc_memo
 * (`<process>/<memo>:<key>`) makes the other processes forget it as soon as the notice arrives, typically
 * within a millisecond. A reconnect of the LISTEN forgets everything (notices may have been
 * missed), and no value outlives Memo's backstop age. A write that bypasses the owner but goes
 * through this process's pool (a script, a test) and matches a memo's `writes` forgets that memo
 * whole, when it is sent and when it returns.
 */
@injectable()
export class SharedMemos {
  private readonly memos = new Map<string, SharedMemo<unknown>>();
  private readonly writes: { pattern: RegExp; memo: SharedMemo<unknown> }[] = [];
  private readonly notifier: Notifier;
  /** Marks this process's notices, which it has applied before sending them. */
  private readonly instance = randomUUID().slice(0, 8);

  constructor(@inject(Tokens.Db) db: Db, @inject(Tokens.Logger) logger: Logger) {
    this.notifier = new Notifier(db, MEMO_CHANNEL, logger);
    const onWrite = (query: { sql?: string }) => {
      if (!query.sql) return;
      for (const w of this.writes) if (w.pattern.test(query.sql)) w.memo.clear();
    };
    db.on('query', onWrite);
    db.on('query-response', (_response: unknown, query: { sql?: string }) => onWrite(query));
  }

  /** The memo called `name` (one per name and process); `writes` matches the statements that change its table. */
  memo<V>(name: string, writes?: RegExp): SharedMemo<V> {
    if (/[:/ ]/.test(name)) throw new Error(`memo name '${name}' may hold no ':', '/' or space`);
    let memo = this.memos.get(name);
    if (!memo) {
      memo = new SharedMemo<unknown>(name, (key) => {
        memo!.forget(key);
        this.notifier.notify(`${this.instance}/${name}:${key}`);
      });
      this.memos.set(name, memo);
      if (writes) this.writes.push({ pattern: writes, memo });
    }
    return memo as SharedMemo<V>;
  }

  /**
   * A notice on svc_memo (the kernel LISTENs for it: core/kernel.ts): space-separated
   * `<process>/<memo>:<key>` parts; an empty one (a reconnect, which may have missed some) forgets everything.
   */
  hear(payload: string): void {
    if (payload === '') {
      for (const memo of this.memos.values()) memo.clear();
      return;
    }
    for (const part of payload.split(' ')) {
      const slash = part.indexOf('/');
      const colon = part.indexOf(':', slash);
      if (slash < 0 || colon < 0 || part.slice(0, slash) === this.instance) continue;
      this.memos.get(part.slice(slash + 1, colon))?.forget(part.slice(colon + 1));
    }
  }
}
