import { createHash, randomBytes } from 'node:crypto';
import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { TokenRejected, TokenService } from '../../core/auth/tokens.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { isRoleName } from '../../core/auth/permissions.ts';
import { UserDirectoryToken, type UserDirectory } from '../../core/ports/directory.ts';
import { LoginLinkRepository } from './login-link-repository.ts';

/** A login link works once, within this many seconds of being made. */
export const LOGIN_LINK_TTL_SECONDS = 60;

export interface ConsoleSession {
  /** The bearer token the session cookie carries; never sent to the page. */
  token: string;
  expiresAt: Date;
  principal: Principal;
}

const hashOf = (code: string) => createHash('sha256').update(code).digest('hex');

/**
 * The console's sign-in: a token the user pasted (or got from /auth/exchange) becomes the session
 * as is; a login link's one-time code becomes a fresh token for the link's user, with the scope,
 * role cap and expiry of the token that made the link.
 */
@injectable()
export class ConsoleSessions {
  constructor(
    @inject(TokenService) private readonly tokens: TokenService,
    @inject(LoginLinkRepository) private readonly links: LoginLinkRepository,
    @inject(UserDirectoryToken) private readonly users: UserDirectory,
  ) {}

  async fromToken(token: string): Promise<ConsoleSession> {
    const principal = await this.check(token);
    return { token, expiresAt: new Date(principal.expiresAt), principal };
  }

  /** A one-time code for the caller's own console; the caller must be a user. */
  async createLink(caller: Principal): Promise<{ code: string; expiresAt: Date }> {
    if (caller.kind !== 'user') throw Boom.forbidden(`a login link opens a user's console; this is a ${caller.kind.replace('_', ' ')} token`);
    const code = randomBytes(32).toString('base64url');
    const expiresAt = new Date(Math.min(Date.now() + LOGIN_LINK_TTL_SECONDS * 1000, Date.parse(caller.expiresAt)));
    await this.links.insert({
      code_hash: hashOf(code),
      user_id: caller.id,
      scope_type: caller.scope?.type ?? null,
      scope_id: caller.scope?.id ?? null,
      role: caller.roleCap,
      session_expires_at: new Date(caller.expiresAt),
      expires_at: expiresAt,
    });
    return { code, expiresAt };
  }

  async fromCode(code: string): Promise<ConsoleSession> {
    const link = await this.links.take(hashOf(code));
    if (!link) throw Boom.unauthorized('this login link is unknown, used or expired: run svc console again');
    const user = await this.users.findById(link.user_id);
    const seconds = Math.floor((link.session_expires_at.getTime() - Date.now()) / 1000);
    if (!user || seconds <= 0) throw Boom.unauthorized('the token that made this login link is no longer valid');
    const scope = link.scope_type && link.scope_id ? { type: link.scope_type, id: link.scope_id } : null;
    const issued = await this.tokens.issueForUser(user, { ttlSeconds: seconds, scope, role: isRoleName(link.role) ? link.role : null });
    return this.fromToken(issued.access_token);
  }

  expireLinks(): Promise<number> {
    return this.links.deleteExpired();
  }

  private async check(token: string): Promise<Principal> {
    try {
      return await this.tokens.authenticate(token);
    } catch (e) {
      if (e instanceof TokenRejected) throw Boom.unauthorized(e.message);
      throw e;
    }
  }
}
