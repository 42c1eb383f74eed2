import pg from 'pg';
import type { Logger } from 'pino';

export interface Listening {
  close(): Promise<void>;
}

/**
 * LISTEN on `channel` over a dedicated connection, calling `onNotice` with each payload. A lost
 * connection is reopened after `retryMs`; the caller's polling covers what is missed meanwhile.
 */
export async function listen(databaseUrl: string, channel: string, onNotice: (payload: string) => void, logger: Logger, retryMs = 1_000): Promise<Listening> {
  let client: pg.Client | null = null;
  let closed = false;
  const retry = (): void => {
    setTimeout(() => void open().catch((err) => {
      logger.warn({ err, channel }, 'LISTEN reconnect failed; trying again');
      retry();
    }), retryMs).unref();
  };
  const open = async (): Promise<void> => {
    if (closed) return;
    const c = new pg.Client({ connectionString: databaseUrl });
    c.on('notification', (msg) => onNotice(msg.payload ?? ''));
    c.on('error', (err) => {
      logger.warn({ err, channel }, 'LISTEN connection lost; reconnecting');
      client = null;
      c.end().catch(() => undefined);
      retry();
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
    } catch (err) {
      await c.end().catch(() => undefined);
      throw err;
    }
    if (closed) await c.end().catch(() => undefined);
    else client = c;
  };
  await open();
  return {
    close: async () => {
      closed = true;
      await client?.end().catch(() => undefined);
    },
  };
}
