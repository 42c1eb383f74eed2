import Boom from '@hapi/boom';
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Config } from '../../core/config/schema.ts';
import type { Db } from '../../core/db/knex.ts';
import { Users, toUser } from './users.ts';
import { emailSchema } from '../../core/http/schemas.ts';
import { TokenService } from '../../core/auth/tokens.ts';
import { Invites } from './invites.ts';

/** Provider and server clocks may differ a little. */
const CLOCK_TOLERANCE_SECONDS = 30;

/** True when POST /auth/exchange can work: a provider secret and issuer are configured. */
export const ssoConfigured = (config: Config) => Boolean(config.auth.sso.secret && config.auth.sso.issuer);

/**
 * Web sign-on: the browser's identity-provider token (HS256 with the shared provider secret, issuer
 * and audience checked, `exp` required) becomes a service token. The account is found by the
 * token's e-mail or created, and pending e-mail invites for it are applied in the same transaction.
 * Without `auth.sso.secret` and `auth.sso.issuer` the route answers 501.
 */
@injectable()
export class SsoExchange {
  constructor(
    @inject(Tokens.Config) private readonly config: Config,
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Users) private readonly users: Users,
    @inject(Invites) private readonly invites: Invites,
    @inject(TokenService) private readonly tokens: TokenService,
  ) {}

  async exchange(idToken: string, ttlDays?: number) {
    const claims = await this.verify(idToken);
    const email = emailSchema.validate(claims.email);
    if (typeof claims.email !== 'string' || email.error) throw Boom.unauthorized('identity token has no valid email claim');
    if (claims.email_verified === false) throw Boom.unauthorized('identity token says the e-mail is not verified');
    const name = typeof claims.name === 'string' && claims.name.trim() ? claims.name.trim().slice(0, 200) : null;
    const user = await this.db.transaction(async (trx) => {
      const { user } = await this.users.ensure(email.value, name, trx);
      await this.invites.applyPending(user, trx);
      return user;
    });
    const token = await this.tokens.issueForUser(user, { ttlDays });
    return { ...token, user: toUser(user) };
  }

  private async verify(idToken: string): Promise<JWTPayload> {
    const { secret, issuer, audience } = this.config.auth.sso;
    if (!secret || !issuer) throw Boom.notImplemented('web sign-on is not configured on this server (set auth.sso.secret and auth.sso.issuer)');
    try {
      const { payload } = await jwtVerify(idToken, new TextEncoder().encode(secret), {
        algorithms: ['HS256'],
        issuer,
        audience,
        requiredClaims: ['exp'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      });
      return payload;
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw Boom.unauthorized('identity token expired');
      if (e instanceof joseErrors.JWTClaimValidationFailed) throw Boom.unauthorized(`identity token rejected: ${e.message}`);
      if (e instanceof joseErrors.JOSEError) throw Boom.unauthorized('identity token rejected: invalid token or signature');
      throw e;
    }
  }
}
