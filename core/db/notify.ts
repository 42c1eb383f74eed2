import type { Logger } from 'pino';
import type { Db } from './knex.ts';
import { afterCommit } from './after-commit.ts';

/** NOTIFY payloads must stay under 8000 bytes. */
const MAX_PAYLOAD = 7_000;

/**
 * NOTIFY on one channel once writes are committed, coalesced: one NOTIFY in flight at a time, the
 * notices asked for meanwhile go together in the next (distinct payloads joined by spaces).
 * Listeners in this process hear at once, without the round trip. A NOTIFY inside the writing
 * transaction would serialize commits on PostgreSQL's notify lock (see docs/decisions.md, jobs).
 */
export class Notifier {
  private readonly pending = new Set<string>();
  private readonly local = new Set<(payload: string) => void>();
  private sending = false;

  constructor(
    private readonly db: Db,
    readonly channel: string,
    private readonly logger: Logger,
  ) {}

  /** Notifies when `db` commits: at once outside a transaction, never after a rollback. */
  afterCommit(db: Db, payload = ''): void {
    afterCommit(db, () => this.notify(payload));
  }

  /** Calls `listener` on every notice this process sends; returns the way to stop. */
  onNotice(listener: (payload: string) => void): () => void {
    this.local.add(listener);
    return () => this.local.delete(listener);
  }

  /**
   * This process's listeners hear `payload` now: `notify` does this before it sends; a notice that
   * went out with the writing statement itself (its own `pg_notify`) needs only this.
   */
  heardHere(payload = ''): void {
    for (const listener of this.local) listener(payload);
  }

  notify(payload = ''): void {
    this.heardHere(payload);
    this.pending.add(payload);
    if (!this.sending) void this.send();
  }

  private async send(): Promise<void> {
    this.sending = true;
    while (this.pending.size > 0) {
      const batch: string[] = [];
      let size = 0;
      for (const p of this.pending) {
        if (batch.length > 0 && size + p.length + 1 > MAX_PAYLOAD) break;
        batch.push(p);
        size += p.length + 1;
      }
      for (const p of batch) this.pending.delete(p);
      await this.db
        .raw('SELECT pg_notify(?, ?)', [this.channel, batch.filter((p) => p !== '').join(' ')])
        .catch((err) => this.logger.warn({ err, channel: this.channel }, 'NOTIFY failed; listeners find the work at their next poll'));
    }
    this.sending = false;
  }
}
