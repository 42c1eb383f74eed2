import { inject, injectable } from '../di.ts';
import { errors as joseErrors } from 'jose';
import { Tokens } from '../tokens.ts';
import type { Config } from '../config/schema.ts';
import type { Db } from '../db/knex.ts';
import { SigningKeys } from './signing-keys.ts';
import { ROLE_NAMES, type RoleName } from './permissions.ts';
import type { Principal, TokenScope } from './principal.ts';

const DAY_SECONDS = 86_400;

export class TokenRejected extends Error {}

export interface IssuedToken {
  access_token: string;
  token_type: 'Bearer';
  expires_at: string;
}

export interface IssueOptions {
  ttlDays?: number;
  scope?: TokenScope | null;
  role?: RoleName | null;
}

/** Issues service tokens for users and turns a presented Bearer token back into a Principal. */
@injectable()
export class TokenService {
  constructor(
    @inject(SigningKeys) private readonly keys: SigningKeys,
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Config) private readonly config: Config,
  ) {}

  async issueForUser(user: { id: string; email: string }, opts: IssueOptions = {}): Promise<IssuedToken> {
    const days = opts.ttlDays ?? this.config.auth.token_ttl_days;
    const claims: Record<string, unknown> = { typ: 'user', email: user.email };
    if (opts.scope) claims.scope = opts.scope;
    if (opts.role) claims.role = opts.role;
    const { token, expiresAt } = await this.keys.sign(claims, user.id, days * DAY_SECONDS);
    return { access_token: token, token_type: 'Bearer', expires_at: expiresAt.toISOString() };
  }

  /** The user is read on every request, so a removed user or a revoked admin flag counts at once. */
  async authenticate(token: string): Promise<Principal> {
    let payload;
    try {
      payload = await this.keys.verify(token);
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw new TokenRejected('token expired');
      throw new TokenRejected('invalid token');
    }
    if (payload.typ !== 'user' || typeof payload.sub !== 'string') throw new TokenRejected('invalid token');
    const user = await this.db('users').where({ id: payload.sub }).first('id', 'email', 'is_admin');
    if (!user) throw new TokenRejected('the user of this token no longer exists');
    const scope = parseScope(payload.scope);
    const role = typeof payload.role === 'string' && (ROLE_NAMES as readonly string[]).includes(payload.role) ? (payload.role as RoleName) : null;
    const expiresAt = new Date((payload.exp ?? 0) * 1000).toISOString();
    return { kind: 'user', id: user.id, email: user.email, isAdmin: user.is_admin && !scope, scope, roleCap: role, expiresAt };
  }
}

function parseScope(raw: unknown): TokenScope | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const { type, id } = raw as Record<string, unknown>;
  if ((type === 'org' || type === 'project') && typeof id === 'string') return { type, id };
  throw new TokenRejected('invalid token');
}
