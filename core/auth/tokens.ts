import { inject, injectable } from '../di.ts';
import { errors as joseErrors, type JWTPayload } from 'jose';
import { Tokens } from '../tokens.ts';
import type { Config } from '../config/schema.ts';
import type { Db } from '../db/knex.ts';
import { Batcher } from '../batcher.ts';
import { AuthCache } from './cache.ts';
import type { Memo } from '../memo.ts';
import { SigningKeys } from './signing-keys.ts';
import { MachineTokens, TokenRejected } from './machine-tokens.ts';
import { isRoleName, type RoleName } from './permissions.ts';
import type { Principal, TokenScope } from './principal.ts';

const DAY_SECONDS = 86_400;
/** Verified tokens remembered (signature and claims only; the user is remembered by the AuthCache). */
const VERIFIED_CACHE_SIZE = 10_000;

interface UserRow {
  id: string;
  email: string;
  is_admin: boolean;
}

export { TokenRejected };

export interface IssuedToken {
  access_token: string;
  token_type: 'Bearer';
  expires_at: string;
}

export interface IssueOptions {
  ttlDays?: number;
  /** Overrides ttlDays: a lifetime in seconds (a console session lasts no longer than the token that opened it). */
  ttlSeconds?: number;
  scope?: TokenScope | null;
  role?: RoleName | null;
}

/** Issues service tokens for users and turns a presented Bearer token back into a Principal. */
@injectable()
export class TokenService {
  private readonly verified = new Map<string, JWTPayload>();
  /** Concurrent requests share one users query. */
  private readonly users = new Batcher<string, UserRow | undefined>(async (ids) => {
    const rows: UserRow[] = await this.db('users')
      .whereRaw('id = ANY(?)', [[...new Set(ids)]])
      .select('id', 'email', 'is_admin');
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id) => byId.get(id));
  });
  private readonly knownUsers: Memo<UserRow>;

  constructor(
    @inject(SigningKeys) private readonly keys: SigningKeys,
    @inject(MachineTokens) private readonly machines: MachineTokens,
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(AuthCache) cache: AuthCache,
  ) {
    this.knownUsers = cache.memo();
  }

  async issueForUser(user: { id: string; email: string }, opts: IssueOptions = {}): Promise<IssuedToken> {
    const days = opts.ttlDays ?? this.config.auth.token_ttl_days;
    const claims: Record<string, unknown> = { typ: 'user', email: user.email };
    if (opts.scope) claims.scope = opts.scope;
    if (opts.role) claims.role = opts.role;
    const { token, expiresAt } = await this.keys.sign(claims, user.id, opts.ttlSeconds ?? days * DAY_SECONDS);
    return { access_token: token, token_type: 'Bearer', expires_at: expiresAt.toISOString() };
  }

  /**
   * The user (or service-account token, or job attempt) behind the token as it is now: users and
   * service-account tokens come from the AuthCache, which forgets them when they change, so a
   * removal or revocation counts at once; a job token's attempt is read every time.
   */
  async authenticate(token: string): Promise<Principal> {
    const payload = await this.verify(token);
    if (payload.typ !== 'user') return this.machines.principalFor(payload);
    if (typeof payload.sub !== 'string') throw new TokenRejected('invalid token');
    const sub = payload.sub;
    const user = await this.knownUsers.get(sub, () => this.users.submit(sub));
    if (!user) throw new TokenRejected('the user of this token no longer exists');
    const scope = parseScope(payload.scope);
    const role = isRoleName(payload.role) ? payload.role : null;
    const expiresAt = new Date((payload.exp ?? 0) * 1000).toISOString();
    return { kind: 'user', id: user.id, email: user.email, isAdmin: user.is_admin && !scope, scope, roleCap: role, expiresAt, permissions: null };
  }

  /**
   * Signature, issuer and expiry. A verified token is remembered until it expires (signing keys
   * stay published while tokens they signed live, so the answer cannot change before then).
   */
  private async verify(token: string): Promise<JWTPayload> {
    const known = this.verified.get(token);
    if (known) {
      if ((known.exp ?? 0) * 1000 > Date.now()) return known;
      this.verified.delete(token);
      throw new TokenRejected('token expired');
    }
    let payload: JWTPayload;
    try {
      payload = await this.keys.verify(token);
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw new TokenRejected('token expired');
      throw new TokenRejected('invalid token');
    }
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, payload);
    return payload;
  }
}

function parseScope(raw: unknown): TokenScope | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const { type, id } = raw as Record<string, unknown>;
  if ((type === 'org' || type === 'project') && typeof id === 'string') return { type, id };
  throw new TokenRejected('invalid token');
}
