import { PostgresNotificationChannel } from '@agendajs/postgres-backend';
import type pg from 'pg';
import type { Logger } from 'pino';
import { Backoff } from '../../../core/db/backoff.ts';

/**
 * The backend's LISTEN/NOTIFY channel, made to survive a database restart. The stock channel
 * re-emits every connection error as an `error` event (which, with nobody listening, is thrown and
 * took the whole process down) and retries every 100 ms without end. Here errors are logged once
 * per outage, reconnection backs off (100 ms doubling to 10 s) for as long as it takes, and nothing
 * reconnects after disconnect(). Agenda polls every `process_every_ms` meanwhile, so no job waits
 * for the channel.
 */
export class ReconnectingNotificationChannel extends PostgresNotificationChannel {
  private readonly backoff = new Backoff(100, 10_000);
  private retryTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(pool: pg.Pool, channelName: string, log: Logger) {
    super({ pool, channelName, reconnect: { enabled: true } });
    this.on('error', (err: Error) => {
      if (this.backoff.failures === 0) log.warn({ err: err.message }, 'scheduler: LISTEN connection lost; reconnecting with backoff');
    });
    this.on('stateChange', (state: string) => {
      if (state !== 'connected') return;
      if (this.backoff.failures > 0) log.info({ attempts: this.backoff.failures }, 'scheduler: LISTEN connection restored');
      this.backoff.reset();
    });
  }

  override async connect(): Promise<void> {
    this.closed = false;
    await super.connect();
  }

  override async disconnect(): Promise<void> {
    this.closed = true;
    await super.disconnect();
  }

  protected override scheduleReconnect(): void {
    if (this.closed || this.retryTimer) return;
    this.setState('reconnecting');
    const delay = this.backoff.next();
    this.backoff.failed();
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (!this.closed) this.connect().catch(() => undefined); // a failure schedules the next try itself
    }, delay);
    this.retryTimer.unref();
  }

  protected override clearReconnect(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }
}
