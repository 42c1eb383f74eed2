import pg from 'pg';
import type { Logger } from 'pino';
import { Backoff } from './backoff.ts';

export interface Listening {
  close(): Promise<void>;
}

/** LISTEN on one channel: see listenAll. */
export function listen(databaseUrl: string, channel: string, onNotice: (payload: string) => void, logger: Logger, retryMs = 1_000): Promise<Listening> {
  return listenAll(databaseUrl, { [channel]: onNotice }, logger, retryMs);
}

/**
 * LISTEN on each channel of `handlers` over one dedicated connection, calling the channel's handler with each payload. A lost or
 * refused connection is reopened with backoff (from `retryMs`, doubling, at most 10 s) for as long
 * as it takes: a database restart never ends the listener, and the caller's polling covers what is
 * missed meanwhile. Resolves once the first attempt has succeeded or failed (the failure is logged,
 * never thrown), so a database that is away at that moment delays nothing.
 */
export async function listenAll(databaseUrl: string, handlers: Record<string, (payload: string) => void>, logger: Logger, retryMs = 1_000): Promise<Listening> {
  const channel = Object.keys(handlers).join(', ');
  let client: pg.Client | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;
  let connectedBefore = false;
  const backoff = new Backoff(Math.min(retryMs, 250), Math.max(retryMs, 10_000));

  const reopenLater = (): void => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = null;
      void open();
    }, backoff.next());
    timer.unref();
  };

  const open = async (): Promise<void> => {
    if (closed) return;
    const c = new pg.Client({ connectionString: databaseUrl });
    let lost = false;
    const onLost = (err?: Error): void => {
      if (lost) return;
      lost = true;
      if (client === c) client = null;
      c.end().catch(() => undefined);
      if (closed) return;
      if (backoff.failures === 0) logger.warn({ err, channel }, 'LISTEN connection lost; reconnecting');
      reopenLater();
    };
    c.on('notification', (msg) => handlers[msg.channel]?.(msg.payload ?? ''));
    c.on('error', onLost);
    c.on('end', () => onLost());
    try {
      await c.connect();
      for (const name of Object.keys(handlers)) await c.query(`LISTEN ${name}`);
    } catch (err) {
      lost = true;
      await c.end().catch(() => undefined);
      if (backoff.failures === 0) logger.warn({ err, channel }, 'LISTEN connection failed; trying again with backoff');
      backoff.failed();
      reopenLater();
      return;
    }
    if (closed) {
      lost = true;
      await c.end().catch(() => undefined);
      return;
    }
    const missed = connectedBefore || backoff.failures > 0;
    if (backoff.failures > 0) logger.info({ channel, attempts: backoff.failures }, 'LISTEN connection restored');
    backoff.reset();
    client = c;
    // A notice sent while the connection was down (or before it first opened) is gone: a wake-up now covers it.
    if (missed) for (const onNotice of Object.values(handlers)) onNotice('');
    connectedBefore = true;
  };

  await open();
  return {
    close: async () => {
      closed = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      await c?.end().catch(() => undefined);
    },
  };
}
