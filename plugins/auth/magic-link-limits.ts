import { createHash } from 'node:crypto';
import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Config } from '../../core/config/schema.ts';

/**
 * Bounds POST /auth/magic-link per e-mail and per client address (auth.magic_link_limits): a fixed
 * window per key in `magic_link_limits`, counted in one statement on the database's clock so every
 * api replica shares it. Every request counts, whether or not the address may sign in, so a 429
 * tells nothing about which e-mails are known. E-mails are kept as their SHA-256 only.
 */
@injectable()
export class MagicLinkLimits {
  private readonly limits: Config['auth']['magic_link_limits'];

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Config) config: Config,
  ) {
    this.limits = config.auth.magic_link_limits;
  }

  /** Counts one request; throws 429 with Retry-After (seconds to the end of the fullest window) when a key is over its limit. */
  async take(email: string, address: string): Promise<void> {
    const { window_seconds: window, per_email, per_address } = this.limits;
    const emailKey = `email:${createHash('sha256').update(email.toLowerCase()).digest('hex')}`;
    const addressKey = `address:${address}`;
    await this.db.raw('DELETE FROM magic_link_limits WHERE window_start <= now() - make_interval(secs => ?)', [window]);
    const { rows } = await this.db.raw(
      `INSERT INTO magic_link_limits AS l (key, window_start, count) VALUES (:emailKey, now(), 1), (:addressKey, now(), 1)
       ON CONFLICT (key) DO UPDATE SET
         count = CASE WHEN l.window_start <= now() - make_interval(secs => :window) THEN 1 ELSE l.count + 1 END,
         window_start = CASE WHEN l.window_start <= now() - make_interval(secs => :window) THEN now() ELSE l.window_start END
       RETURNING key, count, CEIL(EXTRACT(EPOCH FROM l.window_start + make_interval(secs => :window) - now()))::int AS left_s`,
      { emailKey, addressKey, window },
    );
    const over = (rows as { key: string; count: number; left_s: number }[]).filter((r) => r.count > (r.key === emailKey ? per_email : per_address));
    if (over.length === 0) return;
    const retryAfter = Math.max(1, ...over.map((r) => r.left_s));
    const err = Boom.tooManyRequests(`too many sign-in link requests; retry after ${retryAfter} s`);
    err.output.headers['retry-after'] = String(retryAfter);
    throw err;
  }
}
