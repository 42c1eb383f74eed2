import { createHash, randomBytes } from 'node:crypto';
import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens, type Clock } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';
import type { RoleName } from '../../core/auth/permissions.ts';
import { Memberships } from '../../core/auth/memberships.ts';
import { OrgDirectoryToken, type OrgDirectory } from '../../core/ports/directory.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { MailerToken, type Mailer } from '../../core/ports/mail.ts';
import type { Config } from '../../core/config/schema.ts';
import type { Logger } from 'pino';
import { inviteMail, type MailBrand } from './invite-mail.ts';
import type { UserRow } from './users.ts';
import { SshKeyError, parsePublicKey } from '../../domain/signatures/ssh.ts';
import { VcsHostToken, type VcsHost } from '../../core/ports/vcshost.ts';
import { UserKeys } from './keys.ts';
import { codeHostKeys, registerCodeHostKeys } from './invite-code-host.ts';

export const DEFAULT_INVITE_DAYS = 7;
const CODE_PREFIX = 'svcinv_';
const DAY_MS = 86_400_000;

export interface InviteRow {
  id: string;
  org_id: string;
  role: RoleName;
  code_hash: string;
  email: string | null;
  provider_hint: string | null;
  identity_hint: string | null;
  redirect_url: string | null;
  app: Record<string, unknown> | null;
  source: string | null;
  code_host_user: string | null;
  code_host_keys: string[] | null;
  created_by: string | null;
  expires_at: Date;
  accepted_at: Date | null;
  accepted_by: string | null;
  revoked_at: Date | null;
  created_at: Date;
}

export interface InviteInput {
  org_id: string;
  role: RoleName;
  email?: string;
  provider_hint?: string;
  identity_hint?: string;
  code_host_user?: string;
  redirect_url?: string;
  expires_in_days?: number;
  expires_at?: Date;
  app?: Record<string, unknown>;
}

/** Who creates or decides: a user id (null for a service account) and the built-in role held there. */
export interface Actor {
  userId: string | null;
  role: RoleName | null;
}

export type InviteStatus = 'pending' | 'accepted' | 'revoked' | 'expired';

export function inviteStatus(row: InviteRow, now: Date): InviteStatus {
  if (row.accepted_at) return 'accepted';
  if (row.revoked_at) return 'revoked';
  return new Date(row.expires_at).getTime() <= now.getTime() ? 'expired' : 'pending';
}

export const toInvite = (r: InviteRow, now: Date) => ({
  id: r.id,
  org_id: r.org_id,
  role: r.role,
  status: inviteStatus(r, now),
  email: r.email,
  provider_hint: r.provider_hint,
  identity_hint: r.identity_hint,
  redirect_url: r.redirect_url,
  app: r.app,
  source: r.source,
  code_host_user: r.code_host_user,
  code_host_keys: r.code_host_keys?.length ?? 0,
  created_by: r.created_by,
  expires_at: r.expires_at,
  accepted_at: r.accepted_at,
  accepted_by: r.accepted_by,
  revoked_at: r.revoked_at,
  created_at: r.created_at,
});

export const hashCode = (code: string) => createHash('sha256').update(code).digest('hex');

/**
 * An SSH key hint is stored as its canonical "<type> <base64>" line, a 64-hex (nostr) key in lower
 * case; anything else (a fingerprint, say) as given.
 */
export function normalizeIdentityHint(hint: string): string {
  const trimmed = hint.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return trimmed.toLowerCase();
  if (/^(ssh-|ecdsa-)/.test(trimmed)) {
    try {
      return parsePublicKey(trimmed).openssh;
    } catch (e) {
      if (e instanceof SshKeyError) throw Boom.badRequest(`"identity_hint" ${e.message}`);
      throw e;
    }
  }
  return trimmed;
}

/**
 * Org invites: a single-use code (shown once, stored hashed) that grants a role in one org. An
 * invite with an e-mail also applies by itself when that account signs in (web exchange or SSH
 * login); one with an identity hint when that key first authenticates (see invites-identity.ts).
 * An invite with an e-mail is mailed through the mailer adapter (`adapters.mailer`); with none,
 * or when sending fails, `email_sent` is false and the inviter passes the code on.
 */
@injectable()
export class Invites {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Clock) private readonly clock: Clock,
    @inject(Memberships) private readonly memberships: Memberships,
    @inject(OrgDirectoryToken) private readonly orgs: OrgDirectory,
    @inject(MailerToken) private readonly mailer: Mailer,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(Tokens.Logger) readonly logger: Logger,
    @inject(VcsHostToken) private readonly vcshost: VcsHost,
    @inject(UserKeys) readonly keys: UserKeys,
  ) {}

  async create(input: InviteInput, actor: Actor) {
    if (input.role === 'owner' && actor.role !== 'owner') throw Boom.forbidden('only an owner can invite an owner');
    const org = await this.orgs.byId(input.org_id);
    if (org?.deleted) throw Boom.badData(`org ${input.org_id} is deleted`);
    const hostKeys = input.code_host_user ? await codeHostKeys(this.vcshost, input.code_host_user) : null;
    const now = this.clock.now();
    const expiresAt = input.expires_at ?? new Date(now.getTime() + (input.expires_in_days ?? DEFAULT_INVITE_DAYS) * DAY_MS);
    const code = CODE_PREFIX + randomBytes(24).toString('base64url');
    const [row] = await this.db('invites')
      .insert({
        id: newId('inv'),
        org_id: input.org_id,
        role: input.role,
        code_hash: hashCode(code),
        email: input.email ?? null,
        provider_hint: input.provider_hint ?? null,
        identity_hint: input.identity_hint ? normalizeIdentityHint(input.identity_hint) : null,
        redirect_url: input.redirect_url ?? null,
        code_host_user: input.code_host_user ?? null,
        code_host_keys: hostKeys,
        app: input.app ? JSON.stringify(input.app) : null,
        created_by: actor.userId,
        expires_at: expiresAt,
      })
      .returning('*');
    const emailSent = row.email ? await this.mail(row, code, org?.name ?? input.org_id) : false;
    return { ...toInvite(row, now), code, email_sent: emailSent };
  }

  /** Whether the invite's mail went out; a failure is logged (without the code), never the invite's. */
  private async mail(
    row: { id: string; email: string; role: string; expires_at: Date; redirect_url: string | null; app: unknown },
    code: string,
    orgName: string,
  ) {
    const app = (typeof row.app === 'string' ? JSON.parse(row.app) : row.app) as MailBrand | null;
    const message = inviteMail({
      email: row.email,
      code,
      orgName,
      role: row.role,
      expiresAt: new Date(row.expires_at),
      publicUrl: this.config.server.public_url,
      redirectUrl: row.redirect_url,
      app,
    });
    try {
      return (await this.mailer.send(message)).sent;
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, invite: row.id, mailer: this.mailer.name }, 'invite mail not sent');
      return false;
    }
  }

  list(orgId: string, page: Pick<ListQuery, 'limit' | 'offset'>) {
    const now = this.clock.now();
    return paginate<InviteRow, ReturnType<typeof toInvite>>(this.db('invites').where({ org_id: orgId }), page, (r) => toInvite(r, now), 'invites');
  }

  /** Revoking twice is fine; an accepted invite cannot be revoked (remove the member instead). */
  async revoke(orgId: string, inviteId: string): Promise<void> {
    const row: InviteRow | undefined = await this.db('invites').where({ id: inviteId, org_id: orgId }).first();
    if (!row) throw Boom.notFound(`invite ${inviteId} not found`);
    if (row.accepted_at) throw Boom.conflict(`invite ${inviteId} was already accepted; remove the member instead`);
    await this.db('invites').where({ id: inviteId }).whereNull('revoked_at').update({ revoked_at: this.db.fn.now() });
  }

  /** 404 for an unknown code; 410 once used, revoked or expired; 403 when it names another e-mail. */
  async accept(code: string, principal: Principal) {
    if (principal.kind !== 'user' || !principal.email) throw Boom.forbidden('only a user account can accept an invite');
    if (principal.scope) throw Boom.forbidden(`a token scoped to ${principal.scope.type} ${principal.scope.id} cannot accept invites; use a login token`);
    const email = principal.email;
    return this.db.transaction(async (trx) => {
      const row: InviteRow | undefined = await trx('invites')
        .where({ code_hash: hashCode(code) })
        .forUpdate()
        .first();
      if (!row) throw Boom.notFound('invite not found');
      const now = this.clock.now();
      const status = inviteStatus(row, now);
      if (status !== 'pending') throw Boom.resourceGone(`invite ${status === 'accepted' ? 'already used' : status}`);
      if (row.email && row.email.toLowerCase() !== email.toLowerCase()) throw Boom.forbidden('this invite is for another e-mail address');
      const role = await this.memberships.grantAtLeast({ kind: 'org', id: row.org_id }, principal.id, row.role, trx);
      const [used] = await trx('invites').where({ id: row.id }).update({ accepted_at: now, accepted_by: principal.id }).returning('*');
      await registerCodeHostKeys(this, row, principal.id, trx);
      return { invite: toInvite(used, now), membership: { org_id: row.org_id, role } };
    });
  }

  /** Those of the orgs with a pending invite for this e-mail. */
  pendingOrgs(email: string, orgIds: string[], trx: Db = this.db): Promise<string[]> {
    if (orgIds.length === 0) return Promise.resolve([]);
    return trx('invites')
      .distinct('org_id')
      .whereRaw('lower(email) = lower(?)', [email])
      .whereIn('org_id', orgIds)
      .whereNull('accepted_at')
      .whereNull('revoked_at')
      .where('expires_at', '>', this.clock.now())
      .pluck('org_id');
  }

  /**
   * A one-shot invite made and used at once, tagged with what made it (`domain_signup`): the user
   * joins the org with the role, and the org's invite list shows how.
   */
  async grantOneShot(orgId: string, user: Pick<UserRow, 'id' | 'email'>, role: RoleName, source: string, trx: Db): Promise<RoleName> {
    const now = this.clock.now();
    await trx('invites').insert({
      id: newId('inv'),
      org_id: orgId,
      role,
      code_hash: hashCode(CODE_PREFIX + randomBytes(24).toString('base64url')),
      email: user.email,
      source,
      expires_at: now,
      accepted_at: now,
      accepted_by: user.id,
    });
    return this.memberships.grantAtLeast({ kind: 'org', id: orgId }, user.id, role, trx);
  }

  /** Applies every pending invite addressed to the user's e-mail; returns the orgs joined. */
  async applyPending(user: Pick<UserRow, 'id' | 'email'>, trx?: Db): Promise<string[]> {
    if (!trx) return this.db.transaction((t) => this.applyPending(user, t));
    const now = this.clock.now();
    const used: InviteRow[] = await trx('invites')
      .whereRaw('lower(email) = lower(?)', [user.email])
      .whereNull('accepted_at')
      .whereNull('revoked_at')
      .where('expires_at', '>', now)
      .update({ accepted_at: now, accepted_by: user.id })
      .returning('*');
    for (const row of used) {
      await this.memberships.grantAtLeast({ kind: 'org', id: row.org_id }, user.id, row.role, trx);
      await registerCodeHostKeys(this, row, user.id, trx);
    }
    return used.map((r) => r.org_id);
  }
}
