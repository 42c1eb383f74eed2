import { lstatSync, unlinkSync } from 'node:fs';
import Boom from '@hapi/boom';
import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens, type Clock } from '../../core/tokens.ts';
import type { Config } from '../../core/config/schema.ts';
import type { Db } from '../../core/db/knex.ts';
import { Users, toUser } from './users.ts';
import { TokenService } from '../../core/auth/tokens.ts';
import { AuthCache } from '../../core/auth/cache.ts';
import { UserKeys } from './keys.ts';
import { isLocalClient, type Client } from '../../core/http/local-client.ts';
import { sameSecret } from '../../core/crypto/hmac.ts';

const BOOTSTRAP_LOCK = 4701_0003;

export type BootstrapMode = 'auto-open' | 'recovery' | 'secure' | 'closed';

export interface BootstrapStatus {
  completed: boolean;
  window_open: boolean;
  window_closes_at: Date | null;
  requires_token: boolean;
  mode: BootstrapMode;
}

export interface BootstrapRequest {
  email: string;
  token?: string;
  public_key?: string;
  display_name?: string;
  ttl_days?: number;
}

/**
 * The first administrator. Modes, strongest first: secure (SVC_BOOTSTRAP_TOKEN set: token required,
 * open until an admin exists), closed (production without a token), recovery (the trigger file is
 * present: open for 10 minutes from its modification time, even after completion; the file is
 * deleted on success), auto-open (no user exists: open for 10 minutes from this server's start).
 * The trigger file counts only when it is a regular file owned by the server's user or root: its
 * default place is /tmp, where any local account could otherwise open an unauthenticated window.
 * The token-less modes (auto-open, recovery) accept only loopback clients that no proxy forwarded:
 * a first admin from another host needs the secure mode's token.
 */
@injectable()
export class Bootstrap {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(Tokens.Clock) private readonly clock: Clock,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(Tokens.StartedAt) private readonly startedAt: Date,
    @inject(Users) private readonly users: Users,
    @inject(UserKeys) private readonly keys: UserKeys,
    @inject(TokenService) private readonly tokens: TokenService,
    @inject(AuthCache) private readonly cache: AuthCache,
  ) {}

  async status(db: Db = this.db): Promise<BootstrapStatus> {
    const completed = Boolean(await db('users').where({ is_admin: true }).first('id'));
    const windowMs = this.config.auth.bootstrap_window_minutes * 60_000;
    const now = this.clock.now().getTime();
    const closed = (mode: BootstrapMode, requires_token = false): BootstrapStatus => ({
      completed,
      window_open: false,
      window_closes_at: null,
      requires_token,
      mode,
    });

    if (this.config.auth.bootstrap_token) {
      return { completed, window_open: !completed, window_closes_at: null, requires_token: true, mode: 'secure' };
    }
    if (this.config.env === 'production') return closed('closed', true);
    const triggeredAt = this.triggerFileTime();
    if (triggeredAt !== null) {
      const closesAt = triggeredAt + windowMs;
      return { completed, window_open: now < closesAt, window_closes_at: new Date(closesAt), requires_token: false, mode: 'recovery' };
    }
    const anyUser = Boolean(await db('users').first('id'));
    if (anyUser) return closed('auto-open');
    const closesAt = this.startedAt.getTime() + windowMs;
    return { completed, window_open: now < closesAt, window_closes_at: new Date(closesAt), requires_token: false, mode: 'auto-open' };
  }

  async run(request: BootstrapRequest, client: Client) {
    const result = await this.db.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(?)', [BOOTSTRAP_LOCK]);
      const status = await this.status(trx);
      if (status.completed && status.mode !== 'recovery') throw Boom.conflict('bootstrap is already completed: an administrator exists');
      if (!status.window_open) {
        throw Boom.forbidden(
          status.mode === 'closed'
            ? 'bootstrap is closed: NODE_ENV=production requires SVC_BOOTSTRAP_TOKEN'
            : `the bootstrap window is closed; create ${this.config.auth.bootstrap_trigger_file} on the server host to open a 10-minute recovery window`,
        );
      }
      if (!status.requires_token && !isLocalClient(client)) {
        throw Boom.forbidden(
          `the ${status.mode} bootstrap window accepts only clients on this host (loopback, not through a proxy); ` +
            'run `svc auth bootstrap` on the server host, or set SVC_BOOTSTRAP_TOKEN to bootstrap from elsewhere',
        );
      }
      if (status.requires_token) {
        if (!request.token) throw Boom.unauthorized('this server requires the bootstrap token (SVC_BOOTSTRAP_TOKEN)');
        if (!sameSecret(request.token, this.config.auth.bootstrap_token ?? '')) throw Boom.unauthorized('invalid bootstrap token');
      }
      const { user } = await this.users.ensure(request.email, request.display_name ?? null, trx);
      const [admin] = await trx('users').where({ id: user.id }).update({ is_admin: true, updated_at: trx.fn.now() }).returning('*');
      this.cache.changed(trx);
      if (request.public_key) await this.keys.add(admin.id, request.public_key, 'bootstrap', trx, { allowOwnDuplicate: true });
      // Still under the lock: a concurrent request (on any replica) waiting for it then finds the window closed.
      if (status.mode === 'recovery') this.removeTriggerFile();
      return admin;
    });
    const token = await this.tokens.issueForUser(result, { ttlDays: request.ttl_days });
    return { ...token, user: toUser(result) };
  }

  /** One readable line for the start log: how the first admin can be created now, or null when that is not the question. */
  async startNotice(): Promise<{ level: 'info' | 'warn'; line: string } | null> {
    const status = await this.status();
    if (status.completed && status.mode !== 'recovery') return null;
    const command = 'svc auth bootstrap --email you@example.com';
    if (status.mode === 'secure') return { level: 'info', line: `bootstrap: no administrator yet; run \`${command} --token <SVC_BOOTSTRAP_TOKEN>\`` };
    if (status.mode === 'closed')
      return { level: 'warn', line: 'bootstrap: no administrator yet and the window is closed: NODE_ENV=production requires SVC_BOOTSTRAP_TOKEN' };
    if (!status.window_open) return null;
    const until = status.window_closes_at!.toISOString().replace(/\.\d+Z$/, 'Z');
    return { level: 'warn', line: `bootstrap: the ${status.mode} window is open until ${until} to clients on this host only; run \`${command}\` here` };
  }

  private triggerFileTime(): number | null {
    const file = this.config.auth.bootstrap_trigger_file;
    let stat;
    try {
      stat = lstatSync(file); // not stat: a symlink planted by someone else must not count
    } catch {
      return null;
    }
    const uid = process.getuid?.();
    if (!stat.isFile() || (uid !== undefined && stat.uid !== uid && stat.uid !== 0)) {
      this.logger.warn({ file, uid: stat.uid }, 'ignoring the bootstrap trigger file: not a regular file owned by this user or root');
      return null;
    }
    return stat.mtimeMs;
  }

  private removeTriggerFile(): void {
    const file = this.config.auth.bootstrap_trigger_file;
    try {
      unlinkSync(file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.logger.warn({ file, err: e }, 'could not delete the bootstrap trigger file: the recovery window stays open until it is removed');
      }
    }
  }
}
