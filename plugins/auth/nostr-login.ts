import { Conflict } from '../../core/errors.ts';
import Boom from '@hapi/boom';
import { inject, injectable, type DependencyContainer } from '../../core/di.ts';
import { Tokens, type Clock } from '../../core/tokens.ts';
import type { Config } from '../../core/config/schema.ts';
import type { Db } from '../../core/db/knex.ts';
import { Users, toUser, type UserRow } from './users.ts';
import { TokenService } from '../../core/auth/tokens.ts';
import { NostrKeys } from './nostr-keys.ts';
import { LOGIN_EVENT_KIND, NostrEventError, verifyEvent, type NostrEvent } from '../../domain/signatures/nostr.ts';
import { consumeChallenge, issueChallenge } from './challenges.ts';
import { UnknownIdentityHandlerToken, type UnknownIdentityHandler } from '../../core/auth/identity-hooks.ts';

/** Without a registered handler, a key registered to nobody logs nobody in. */
export const refuseUnknownIdentities: UnknownIdentityHandler = { onUnknownIdentity: async () => null };

/** The handler registered under UnknownIdentityHandlerToken (by the invites code), looked up when needed. */
export function unknownIdentityHandler(container: DependencyContainer): UnknownIdentityHandler {
  return container.isRegistered(UnknownIdentityHandlerToken, true) ? container.resolve(UnknownIdentityHandlerToken) : refuseUnknownIdentities;
}

interface ChallengeRow {
  id: string;
  email: string | null;
  pubkey: string | null;
  nonce: string;
  expires_at: Date;
}

export type ChallengeSubject = { email: string } | { pubkey: string };

/**
 * Schnorr (BIP-340) login: a single-use nonce, answered with a signed Nostr event of kind 22242 whose
 * content is the nonce (docs/nostr.md). Mirrors SshLogin: a challenge is issued for any e-mail or key
 * (existence is not revealed) and consumed by the first verify, whatever its outcome.
 */
@injectable()
export class NostrLogin {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(Tokens.Clock) private readonly clock: Clock,
    @inject(Users) private readonly users: Users,
    @inject(NostrKeys) private readonly keys: NostrKeys,
    @inject(TokenService) private readonly tokens: TokenService,
  ) {}

  async challenge(subject: ChallengeSubject) {
    const fields = { email: 'email' in subject ? subject.email : null, pubkey: 'pubkey' in subject ? subject.pubkey.toLowerCase() : null };
    const row = await issueChallenge(this.db, 'nostr_challenges', fields, this.clock.now(), this.config.auth.challenge_ttl_seconds);
    return { challenge_id: row.id, nonce: row.nonce, kind: LOGIN_EVENT_KIND, expires_at: row.expires_at };
  }

  async verify(challengeId: string, event: NostrEvent, handler: UnknownIdentityHandler, ttlDays?: number) {
    const challenge = await consumeChallenge<ChallengeRow>(this.db, 'nostr_challenges', challengeId, this.clock.now());
    if (event.kind !== LOGIN_EVENT_KIND) throw Boom.unauthorized(`signature rejected: event kind must be ${LOGIN_EVENT_KIND}`);
    if (event.content !== challenge.nonce) throw Boom.unauthorized('signature rejected: event content is not the challenge nonce');
    if (challenge.pubkey && event.pubkey !== challenge.pubkey) throw Boom.unauthorized('signature rejected: event pubkey is not the challenged key');
    try {
      verifyEvent(event);
    } catch (e) {
      if (e instanceof NostrEventError) throw Boom.unauthorized(`signature rejected: ${e.message}`);
      throw e;
    }
    const user = await this.userFor(event.pubkey, challenge.email, handler);
    const token = await this.tokens.issueForUser(user, { ttlDays });
    return { ...token, user: toUser(user) };
  }

  /** The account the verified key logs into: its owner, or whom the unknown-identity handler answers. */
  private async userFor(pubkey: string, email: string | null, handler: UnknownIdentityHandler): Promise<UserRow> {
    const notFor = () => Boom.unauthorized(`no nostr key ${pubkey} is registered for ${email}`);
    const owner = await this.keys.find(pubkey);
    if (owner) {
      const user = await this.users.findById(owner.user_id);
      if (!user || (email && user.email.toLowerCase() !== email.toLowerCase())) throw notFor();
      return user;
    }
    const granted = await handler.onUnknownIdentity({ kind: 'nostr', publicKey: pubkey });
    const user = granted && (await this.users.findById(granted.userId));
    if (!user) throw Boom.unauthorized('no user has this key');
    if (email && user.email.toLowerCase() !== email.toLowerCase()) throw notFor();
    // So that the next login finds it; the handler may already have registered it.
    try {
      await this.keys.add(user.id, pubkey, null, this.db, { allowOwnDuplicate: true });
    } catch (e) {
      if (e instanceof Conflict) throw Boom.unauthorized(`nostr key ${pubkey} is registered to another account`);
      throw e;
    }
    return user;
  }
}
