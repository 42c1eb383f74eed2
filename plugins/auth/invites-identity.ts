import { createHash } from 'node:crypto';
import { inject, injectable } from '../../core/di.ts';
import { Tokens, type Clock } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { Users } from './users.ts';
import { SshKeyError, parsePublicKey } from '../../domain/signatures/ssh.ts';
import type { UnknownIdentity, UnknownIdentityHandler } from '../../core/auth/identity-hooks.ts';
import { NostrKeys } from './nostr-keys.ts';
import { UserKeys } from './keys.ts';
import type { InviteRow } from './invites.ts';
import { Memberships } from '../../core/auth/memberships.ts';
import { registerCodeHostKeys } from './invite-code-host.ts';
import type { Logger } from 'pino';

/** The ways an invite's identity hint may name this key: canonical key, raw key, fingerprint. */
function hintsFor(identity: UnknownIdentity): string[] {
  const hints = new Set<string>([identity.publicKey.trim()]);
  if (identity.fingerprint) hints.add(identity.fingerprint);
  if (identity.kind === 'nostr') hints.add(identity.publicKey.trim().toLowerCase());
  if (identity.kind === 'ssh') {
    try {
      const key = parsePublicKey(identity.publicKey);
      hints.add(key.openssh);
      hints.add(key.fingerprint);
    } catch (e) {
      if (!(e instanceof SshKeyError)) throw e;
    }
  }
  return [...hints];
}

/** An account made from a key alone gets a placeholder address under the reserved .invalid domain. */
const placeholderEmail = (identity: UnknownIdentity) =>
  `${identity.kind}-${createHash('sha256').update(identity.publicKey.trim().toLowerCase()).digest('hex').slice(0, 16)}@identity.invalid`;

/**
 * Identity-targeted invites: a key that authenticated but is registered to nobody, matching a
 * pending invite's identity hint, gets an account (the invite's e-mail, else a placeholder), the
 * org membership and the key registered, in one transaction; the invite is used up.
 */
@injectable()
export class InviteIdentities implements UnknownIdentityHandler {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Clock) private readonly clock: Clock,
    @inject(Users) private readonly users: Users,
    @inject(UserKeys) readonly keys: UserKeys,
    @inject(NostrKeys) private readonly nostrKeys: NostrKeys,
    @inject(Memberships) private readonly memberships: Memberships,
    @inject(Tokens.Logger) readonly logger: Logger,
  ) {}

  onUnknownIdentity(identity: UnknownIdentity): Promise<{ userId: string } | null> {
    const hints = hintsFor(identity);
    return this.db.transaction(async (trx) => {
      const now = this.clock.now();
      const invite: InviteRow | undefined = await trx('invites')
        .where((q) => q.whereIn('identity_hint', hints).orWhereRaw('code_host_keys && ?::text[]', [hints]))
        .whereNull('accepted_at')
        .whereNull('revoked_at')
        .where('expires_at', '>', now)
        .orderBy('created_at', 'asc')
        .forUpdate()
        .skipLocked()
        .first();
      if (!invite) return null;
      const { user } = await this.users.ensure(invite.email ?? placeholderEmail(identity), null, trx);
      await this.memberships.grantAtLeast({ kind: 'org', id: invite.org_id }, user.id, invite.role, trx);
      await trx('invites').where({ id: invite.id }).update({ accepted_at: now, accepted_by: user.id });
      await registerCodeHostKeys(this, invite, user.id, trx);
      if (identity.kind === 'ssh') await this.keys.add(user.id, identity.publicKey, 'invite', trx, { allowOwnDuplicate: true });
      else await this.nostrKeys.add(user.id, identity.publicKey.trim(), 'invite', trx, { allowOwnDuplicate: true });
      return { userId: user.id };
    });
  }
}
