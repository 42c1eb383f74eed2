import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { Notifier } from '../../core/db/notify.ts';

/** NOTIFY on this channel when a build run is queued, so an idle runner claims it at once. */
export const BUILD_QUEUE_CHANNEL = 'svc_build_queue';

@injectable()
export class BuildWakeups extends Notifier {
  constructor(@inject(Tokens.Db) db: Db, @inject(Tokens.Logger) logger: Logger) {
    super(db, BUILD_QUEUE_CHANNEL, logger);
  }
}
