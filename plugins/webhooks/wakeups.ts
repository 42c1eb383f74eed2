import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { Notifier } from '../../core/db/notify.ts';

/** Deliveries became due outside the event path (a replay): dispatchers LISTEN here. */
export const WEBHOOKS_CHANNEL = 'svc_webhooks';

@injectable()
export class WebhookWakeups extends Notifier {
  constructor(@inject(Tokens.Db) db: Db, @inject(Tokens.Logger) logger: Logger) {
    super(db, WEBHOOKS_CHANNEL, logger);
  }
}
