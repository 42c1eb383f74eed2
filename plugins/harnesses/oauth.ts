import { createHash } from 'node:crypto';
import type { Sealer } from '../../core/crypto/sealer.ts';
import { UpstreamFailed } from '../../core/errors.ts';
import { isObject } from '../../core/is-object.ts';
import type { Outcome } from '../../core/http/guarded-post.ts';
import type { HarnessOAuth } from '../../core/ports/harness.ts';
import { oauthSealContext, type OAuthTokenRepository, type OAuthTokenRow } from './oauth-repository.ts';

export interface OAuthSettings {
  refresh_before_seconds: number;
  token_urls: Record<string, string>;
}

/** When the token endpoint gives no `expires_in` (RFC 6749 only recommends it), the token is taken to last an hour. */
const DEFAULT_LIFETIME_S = 3600;

/** Names a stored refresh token without keeping it: the family and the value, hashed. */
export const seedHash = (family: string, refreshToken: string): string => createHash('sha256').update(`${family}\0${refreshToken}`).digest('hex');

/**
 * Access tokens for OAuth logins (a Claude subscription): a stored refresh token seeds a row whose
 * access token is handed out while more than `refresh_before_seconds` of it remain, and exchanged
 * for a new one (the refresh token rotating with it when the endpoint says so) once fewer do. One
 * process at a time exchanges a given login; the others then read what it stored.
 */
export class OAuthRefresher {
  constructor(
    private readonly tokens: OAuthTokenRepository,
    private readonly sealer: Sealer,
    private readonly post: (url: string, body: string, headers: Record<string, string>) => Promise<Outcome>,
    private readonly settings: OAuthSettings,
    private readonly now: () => number = Date.now,
  ) {}

  async accessToken(oauth: HarnessOAuth, refreshToken: string): Promise<string> {
    const seed = seedHash(oauth.family, refreshToken);
    const cached = await this.tokens.find(seed);
    if (cached && this.fresh(cached)) return this.sealer.open(cached.access_token_sealed, oauthSealContext('access', seed));
    return this.tokens.locked(seed, async (rows) => {
      const row = await rows.find();
      if (row && this.fresh(row)) return this.sealer.open(row.access_token_sealed, oauthSealContext('access', seed));
      const current = row ? this.sealer.open(row.refresh_token_sealed, oauthSealContext('refresh', seed)) : refreshToken;
      const grant = await this.exchange(oauth, current);
      await rows.save({
        family: oauth.family,
        seed_hash: seed,
        access_token_sealed: this.sealer.seal(grant.accessToken, oauthSealContext('access', seed)),
        refresh_token_sealed: this.sealer.seal(grant.refreshToken ?? current, oauthSealContext('refresh', seed)),
        expires_at: new Date(this.now() + grant.lifetimeS * 1000),
      });
      return grant.accessToken;
    });
  }

  private fresh(row: OAuthTokenRow): boolean {
    return new Date(row.expires_at).getTime() - this.now() > this.settings.refresh_before_seconds * 1000;
  }

  /** The refresh grant (RFC 6749 §6) as Claude Code sends it: JSON with the CLI's client id. */
  private async exchange(oauth: HarnessOAuth, refreshToken: string): Promise<{ accessToken: string; refreshToken: string | null; lifetimeS: number }> {
    const url = this.settings.token_urls[oauth.family] ?? oauth.tokenUrl;
    const body = JSON.stringify({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: oauth.clientId });
    const outcome = await this.post(url, body, { 'content-type': 'application/json', accept: 'application/json' });
    const refused = (why: string) =>
      new UpstreamFailed(`could not refresh the ${oauth.family} OAuth login stored as ${oauth.refresh}: ${why}`, {
        family: oauth.family,
        secret: oauth.refresh,
      });
    if (outcome.status === null) throw refused(`the token endpoint could not be reached (${outcome.error})`);
    const answer = parseObject(outcome.body);
    if (!outcome.ok) {
      // Only the error code: a description may quote what was sent.
      const code = typeof answer?.error === 'string' && /^[a-z_]{1,64}$/.test(answer.error) ? `: ${answer.error}` : '';
      throw refused(`the token endpoint answered ${outcome.status}${code}; store a new refresh token as ${oauth.refresh}`);
    }
    if (typeof answer?.access_token !== 'string' || !answer.access_token) throw refused('the token endpoint answered without an access_token');
    const lifetime = answer.expires_in;
    return {
      accessToken: answer.access_token,
      refreshToken: typeof answer.refresh_token === 'string' && answer.refresh_token ? answer.refresh_token : null,
      lifetimeS: typeof lifetime === 'number' && lifetime > 0 ? lifetime : DEFAULT_LIFETIME_S,
    };
  }
}

function parseObject(text: string | null): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text ?? '');
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}
