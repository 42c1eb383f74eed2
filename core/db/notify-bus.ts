import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db } from './knex.ts';
import { Notifier } from './notify.ts';
import { listen, type Listening } from './listen.ts';

/**
 * Tells listeners that a key (a run, an attempt) has something new. Listeners in this process hear
 * at once; other processes hear through NOTIFY on `channel` (a Notifier: after the caller's commit,
 * coalesced; payload `<instance> <key>…`, so a process skips its own notices). The LISTEN
 * connection opens with the first subscriber.
 */
export class NotifyBus {
  private readonly instance = randomUUID().slice(0, 8);
  private readonly subscribers = new Map<string, Set<() => void>>();
  private readonly notifier: Notifier;
  private listening: Promise<Listening | null> | null = null;

  constructor(
    private readonly channel: string,
    /** What the keys are, for log messages ("pipeline run"). */
    private readonly what: string,
    db: Db,
    private readonly databaseUrl: string,
    private readonly logger: Logger,
  ) {
    this.notifier = new Notifier(db, channel, logger);
  }

  publish(key: string): void {
    this.deliver(key);
    this.notifier.notify(`${this.instance}:${key}`);
  }

  /** Calls `listener` whenever `key` has news; returns the way to stop. */
  subscribe(key: string, listener: () => void): () => void {
    this.listening ??= listen(this.databaseUrl, this.channel, (payload) => this.heard(payload), this.logger).catch((err) => {
      this.logger.warn({ err }, `${this.what} LISTEN failed; streams hear only this process and their keep-alive`);
      return null;
    });
    const set = this.subscribers.get(key) ?? new Set();
    set.add(listener);
    this.subscribers.set(key, set);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.subscribers.delete(key);
    };
  }

  async close(): Promise<void> {
    await (await this.listening)?.close();
  }

  /**
   * A notice is `<instance>:<key>` entries joined by spaces (the Notifier coalesces them). An empty
   * one is the LISTEN connection's wake-up after it was down: notices may be lost, so every
   * subscriber looks again (streams have no polling of their own).
   */
  private heard(payload: string): void {
    if (payload === '') {
      for (const listeners of this.subscribers.values()) for (const listener of listeners) listener();
      return;
    }
    for (const entry of payload.split(' ')) {
      const at = entry.indexOf(':');
      if (at > 0 && entry.slice(0, at) !== this.instance) this.deliver(entry.slice(at + 1));
    }
  }

  private deliver(key: string): void {
    for (const listener of this.subscribers.get(key) ?? []) listener();
  }
}
