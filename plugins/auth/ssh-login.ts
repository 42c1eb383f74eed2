import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens, type Clock } from '../../core/tokens.ts';
import type { Config } from '../../core/config/schema.ts';
import type { Db } from '../../core/db/knex.ts';
import { Users, toUser } from './users.ts';
import { TokenService } from '../../core/auth/tokens.ts';
import { SshKeyError, verifySshSignature } from '../../domain/signatures/ssh.ts';
import { UserKeys } from './keys.ts';
import { consumeChallenge, issueChallenge } from './challenges.ts';
import { Invites } from './invites.ts';

export const SIGNATURE_NAMESPACE = 'svc-auth';

/**
 * Key-signature login: a single-use nonce, signed by the client with `ssh-keygen -Y sign -n svc-auth`.
 * A challenge is issued for any e-mail (existence is not revealed) and consumed by the first verify,
 * whatever its outcome, so a nonce cannot be tried twice.
 */
@injectable()
export class SshLogin {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(Tokens.Clock) private readonly clock: Clock,
    @inject(Users) private readonly users: Users,
    @inject(UserKeys) private readonly keys: UserKeys,
    @inject(TokenService) private readonly tokens: TokenService,
    @inject(Invites) private readonly invites: Invites,
  ) {}

  /** Housekeeping: challenges an hour past their expiry go. */
  async expireChallenges(): Promise<void> {
    await this.db('auth_challenges').where('expires_at', '<', this.db.raw("now() - interval '1 hour'")).delete();
  }

  async challenge(email: string) {
    const row = await issueChallenge(this.db, 'auth_challenges', { email }, this.clock.now(), this.config.auth.challenge_ttl_seconds);
    return { challenge_id: row.id, nonce: row.nonce, namespace: SIGNATURE_NAMESPACE, expires_at: row.expires_at };
  }

  async verify(challengeId: string, signature: string, ttlDays?: number) {
    const challenge = await consumeChallenge<{ email: string; nonce: string; expires_at: Date }>(this.db, 'auth_challenges', challengeId, this.clock.now());
    let signed;
    try {
      signed = verifySshSignature(signature, challenge.nonce, SIGNATURE_NAMESPACE);
    } catch (e) {
      if (e instanceof SshKeyError) throw Boom.unauthorized(`signature rejected: ${e.message}`);
      throw e;
    }
    const user = await this.users.findByEmail(challenge.email);
    if (!user || !(await this.keys.findForUser(user.id, signed.key.fingerprint))) {
      throw Boom.unauthorized(`no key ${signed.key.fingerprint} is registered for ${challenge.email}`);
    }
    await this.invites.applyPending(user); // invites to this e-mail join their orgs at login
    const token = await this.tokens.issueForUser(user, { ttlDays });
    return { ...token, user: toUser(user) };
  }
}
