import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { NotifyBus } from '../../core/db/notify-bus.ts';

/** The channel that tells other processes a run has new events; the payload is `<instance> <run id>…`. */
export const RUN_CHANNEL = 'svc_pipeline_runs';

/** Tells streams that a run (the key: its id) has new events, in this process and through NOTIFY. */
@injectable()
export class RunEventBus extends NotifyBus {
  constructor(@inject(Tokens.Db) db: Db, @inject(Tokens.DatabaseUrl) databaseUrl: string, @inject(Tokens.Logger) logger: Logger) {
    super(RUN_CHANNEL, 'pipeline run', db, databaseUrl, logger);
  }
}
