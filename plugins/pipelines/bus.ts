import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';

/** The channel that tells other processes a run has new events; the payload is `<instance> <run id>…`. */
export const RUN_CHANNEL = 'svc_pipeline_runs';
/** NOTIFY payloads must stay under 8000 bytes. */
const MAX_PAYLOAD = 7_000;

/**
 * Tells streams that a run has new events. Streams in this process hear at once; other processes
 * hear through NOTIFY, sent after commit and coalesced (one in flight; the runs that committed
 * meanwhile go together in the next). The LISTEN connection opens with the first subscriber.
 */
@injectable()
export class RunEventBus {
  private readonly instance = randomUUID().slice(0, 8);
  private readonly subscribers = new Map<string, Set<() => void>>();
  private pending = new Set<string>();
  private sending = false;
  private listener: Promise<pg.Client | null> | null = null;
  private closed = false;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.DatabaseUrl) private readonly databaseUrl: string,
    @inject(Tokens.Logger) private readonly logger: Logger,
  ) {}

  publish(runId: string): void {
    this.deliver(runId);
    this.pending.add(runId);
    if (!this.sending) void this.send();
  }

  /** Calls `listener` whenever `runId` has new events; returns the way to stop. */
  subscribe(runId: string, listener: () => void): () => void {
    this.listener ??= this.listen();
    const set = this.subscribers.get(runId) ?? new Set();
    set.add(listener);
    this.subscribers.set(runId, set);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.subscribers.delete(runId);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = await this.listener;
    await client?.end().catch(() => undefined);
  }

  private deliver(runId: string): void {
    for (const listener of this.subscribers.get(runId) ?? []) listener();
  }

  private async send(): Promise<void> {
    this.sending = true;
    while (this.pending.size > 0 && !this.closed) {
      const ids: string[] = [];
      let size = this.instance.length;
      for (const id of this.pending) {
        if (size + id.length + 1 > MAX_PAYLOAD) break;
        ids.push(id);
        size += id.length + 1;
      }
      for (const id of ids) this.pending.delete(id);
      await this.db
        .raw('SELECT pg_notify(?, ?)', [RUN_CHANNEL, [this.instance, ...ids].join(' ')])
        .catch((err) => this.logger.warn({ err }, 'pipeline run NOTIFY failed; streams in other processes hear at their next keep-alive'));
    }
    this.sending = false;
  }

  private async listen(): Promise<pg.Client | null> {
    const client = new pg.Client({ connectionString: this.databaseUrl });
    try {
      await client.connect();
      client.on('notification', (msg) => {
        const [from, ...ids] = (msg.payload ?? '').split(' ');
        if (from !== this.instance) for (const id of ids) this.deliver(id);
      });
      client.on('error', (err) => this.logger.warn({ err }, 'pipeline run LISTEN connection failed'));
      await client.query(`LISTEN ${RUN_CHANNEL}`);
      return client;
    } catch (err) {
      this.logger.warn({ err }, 'pipeline run LISTEN failed; streams hear only this process and their keep-alive');
      await client.end().catch(() => undefined);
      return null;
    }
  }
}
