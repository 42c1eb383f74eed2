import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import Boom from '@hapi/boom';
import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens, type Clock } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Config } from '../../core/config/schema.ts';
import { newId } from '../../core/ids.ts';
import { TokenService } from '../../core/auth/tokens.ts';
import { Memberships } from '../../core/auth/memberships.ts';
import { MailerToken, type Mailer } from '../../core/ports/mail.ts';
import { OrgDirectoryToken, type OrgDirectory } from '../../core/ports/directory.ts';
import { AppSettingsReader, checkRedirect, type AppSettings } from './app-settings.ts';
import { Invites, type InviteInput } from './invites.ts';
import { Users, toUser, type UserRow } from './users.ts';
import { checkPassword, hashPassword } from './passwords.ts';
import { magicLinkMail } from './invite-mail.ts';
import { MagicLinkLimits } from './magic-link-limits.ts';

/** How long a sign-in link works. */
export const MAGIC_LINK_MINUTES = 15;
/** What every sign-in link request answers, whether or not mail went out (no telling which e-mails are known). */
export const LINK_REQUESTED = { status: 'requested', message: 'If this address may sign in, a sign-in link is on its way.' } as const;

interface MagicLinkRow {
  id: string;
  project_id: string;
  email: string;
  secret_hash: string;
  redirect_url: string | null;
  expires_at: Date;
  used_at: Date | null;
}

export type AppInviteInput = Omit<InviteInput, 'role'> & { role?: InviteInput['role']; project_id?: string };

const sha256 = (value: string) => createHash('sha256').update(value).digest();

/** Why an e-mail may sign in to the app: an account, an invite from an allowed org, its domain, or open signup. */
interface Standing {
  user: UserRow | undefined;
  inviteOrgs: string[];
  domain: { orgId: string; role: AppSettings['invite']['invitedRole'] } | null;
}

/**
 * App-side login (x-svc.auth): single-use sign-in links mailed through the mailer adapter, valid for
 * MAGIC_LINK_MINUTES, stored as the SHA-256 of their secret and compared in constant time; and the
 * password login of apps whose login_method allows it. See docs/app-login.md.
 */
@injectable()
export class AppLogin {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Clock) private readonly clock: Clock,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(AppSettingsReader) private readonly apps: AppSettingsReader,
    @inject(Users) private readonly users: Users,
    @inject(Invites) private readonly invites: Invites,
    @inject(Memberships) private readonly memberships: Memberships,
    @inject(OrgDirectoryToken) private readonly orgs: OrgDirectory,
    @inject(MailerToken) private readonly mailer: Mailer,
    @inject(TokenService) private readonly tokens: TokenService,
    @inject(MagicLinkLimits) private readonly limits: MagicLinkLimits,
  ) {}

  /** Public sign-in settings and branding of the app. */
  async settings(projectId: string) {
    const s = await this.apps.of(projectId);
    return {
      project_id: s.projectId,
      branding: s.branding,
      login_method: s.loginMethod,
      self_signup: s.selfSignup,
      invite_requires_password: s.inviteRequiresPassword,
      magic_link_path: '/auth/magic-link',
      verify_path: '/auth/magic-link/verify',
      password_login_path: s.loginMethod === 'password_or_magic_link' ? '/auth/password/login' : null,
      magic_link_minutes: MAGIC_LINK_MINUTES,
    };
  }

  /**
   * What an app invite becomes: with a project, the app's `org_access.invite` must be enabled and
   * list the org (422 otherwise), its role defaults to `invited_role`, its branding and redirect
   * come from the app. Without one, the branding given in the request.
   */
  async appInvite(input: AppInviteInput): Promise<InviteInput> {
    const { project_id, app, role, ...rest } = input;
    if (!project_id) return { ...rest, role: role ?? 'member', app };
    const settings = await this.apps.of(project_id);
    if (!settings.invite.enabled) throw Boom.badData(`app ${project_id} does not take invites (x-svc.auth.org_access.invite.enabled)`);
    const org = await this.orgs.byId(input.org_id);
    if (!org || !settings.invite.allowedOrgs.some((ref) => ref === org.id || ref === org.slug)) {
      throw Boom.badData(`org ${input.org_id} is not in the app's x-svc.auth.org_access.invite.allowed_orgs`);
    }
    checkRedirect(settings, input.redirect_url);
    const branding = Object.fromEntries(Object.entries({ ...settings.branding, ...app }).filter(([, v]) => v !== null));
    return { ...rest, role: role ?? settings.invite.invitedRole, app: { ...branding, project_id } };
  }

  /**
   * Mails a sign-in link when the e-mail may sign in; the same answer either way, and nothing stored
   * or sent otherwise. Over the e-mail's or the client address's limit, 429 before anything else.
   */
  async request(input: { project_id: string; email: string; redirect_url?: string }, clientAddress: string) {
    await this.limits.take(input.email, clientAddress);
    const settings = await this.apps.of(input.project_id);
    checkRedirect(settings, input.redirect_url);
    if (!this.mayEnter(settings, await this.standing(settings, input.email))) return LINK_REQUESTED;
    const id = newId('mlk');
    const secret = randomBytes(32).toString('base64url');
    const expiresAt = new Date(this.clock.now().getTime() + MAGIC_LINK_MINUTES * 60_000);
    await this.db('magic_links').insert({
      id,
      project_id: settings.projectId,
      email: input.email,
      secret_hash: sha256(secret).toString('hex'),
      redirect_url: input.redirect_url ?? null,
      expires_at: expiresAt,
    });
    const message = magicLinkMail({
      email: input.email,
      token: `${id}.${secret}`,
      branding: settings.branding,
      expiresAt,
      publicUrl: this.config.server.public_url,
      redirectUrl: input.redirect_url ?? null,
    });
    try {
      await this.mailer.send(message);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, link: id, mailer: this.mailer.name }, 'sign-in link not sent');
    }
    return LINK_REQUESTED;
  }

  /**
   * Uses a sign-in link: 401 when it is unknown, wrong or for another e-mail, 410 once used or
   * expired. Creates the account when the app lets it in, applies its pending invites and a
   * matching domain signup, sets a password when given (and asks for one when an invite needs it).
   */
  async verify(input: { token: string; email: string; password?: string }) {
    const [id, secret] = input.token.split('.');
    return this.db.transaction(async (trx) => {
      const row: MagicLinkRow | undefined = await trx('magic_links').where({ id }).forUpdate().first();
      const expected = Buffer.from(row?.secret_hash ?? '', 'hex');
      const actual = sha256(secret);
      if (!row || expected.length !== actual.length || !timingSafeEqual(expected, actual)) throw Boom.unauthorized('sign-in link is not valid');
      if (row.email.toLowerCase() !== input.email.toLowerCase()) throw Boom.unauthorized('sign-in link is for another e-mail address');
      if (row.used_at) throw Boom.resourceGone('sign-in link already used');
      if (new Date(row.expires_at).getTime() <= this.clock.now().getTime()) throw Boom.resourceGone('sign-in link expired');
      const settings = await this.apps.of(row.project_id);
      const standing = await this.standing(settings, row.email, trx);
      if (!this.mayEnter(settings, standing)) throw Boom.unauthorized('this address may no longer sign in to the app');
      const passwords = settings.loginMethod === 'password_or_magic_link' || settings.inviteRequiresPassword;
      if (input.password !== undefined && !passwords) throw Boom.badData('"password" is not used by this app (x-svc.auth.login_method is magic_link)');
      if (
        settings.inviteRequiresPassword &&
        standing.inviteOrgs.length > 0 &&
        !(await this.users.passwordHash(row.email, trx)) &&
        input.password === undefined
      ) {
        throw Boom.badData('"password" is required: this app asks invited users to choose a password when they first sign in');
      }
      await trx('magic_links').where({ id: row.id }).update({ used_at: this.clock.now() });
      const { user } = await this.users.ensure(row.email, null, trx);
      if (input.password !== undefined)
        await trx('users')
          .where({ id: user.id })
          .update({ password_hash: await hashPassword(input.password) });
      const joined = await this.invites.applyPending(user, trx);
      if (standing.domain && !joined.includes(standing.domain.orgId) && !(await this.memberOf(user.id, standing.domain.orgId))) {
        await this.invites.grantOneShot(standing.domain.orgId, user, standing.domain.role, 'domain_signup', trx);
        joined.push(standing.domain.orgId);
      }
      return this.signedIn(user, joined, row.redirect_url);
    });
  }

  /** Password login for apps whose login_method is password_or_magic_link; one answer for every wrong e-mail or password. */
  async passwordLogin(input: { project_id: string; email: string; password: string }) {
    const settings = await this.apps.of(input.project_id);
    if (settings.loginMethod !== 'password_or_magic_link') throw Boom.badData('this app signs in with links only (x-svc.auth.login_method is magic_link)');
    const user = await this.users.findByEmail(input.email);
    if (!(await checkPassword(input.password, await this.users.passwordHash(input.email))) || !user) throw Boom.unauthorized('wrong e-mail or password');
    return this.signedIn(user, [], null);
  }

  private async signedIn(user: UserRow, joined: string[], redirectUrl: string | null) {
    const token = await this.tokens.issueForUser(user);
    return { ...token, user: toUser(user), orgs_joined: joined, redirect_url: redirectUrl };
  }

  private async memberOf(userId: string, orgId: string): Promise<boolean> {
    return (await this.memberships.ofUser(userId)).orgs.some((o) => o.id === orgId);
  }

  private mayEnter(settings: AppSettings, s: Standing): boolean {
    return Boolean(s.user) || settings.selfSignup || s.inviteOrgs.length > 0 || s.domain !== null;
  }

  private async standing(settings: AppSettings, email: string, trx: Db = this.db): Promise<Standing> {
    const user = await this.users.findByEmail(email, trx);
    let inviteOrgs: string[] = [];
    if (settings.invite.enabled) {
      const allowed = await Promise.all(settings.invite.allowedOrgs.map((ref) => this.orgs.byRef(ref, trx)));
      inviteOrgs = await this.invites.pendingOrgs(
        email,
        allowed.flatMap((o) => (o && !o.deleted ? [o.id] : [])),
        trx,
      );
    }
    let domain: Standing['domain'] = null;
    const entry = settings.domainSignup.enabled ? settings.domainSignup.domains.find((d) => email.toLowerCase().endsWith(`@${d.domain}`)) : undefined;
    if (entry) {
      const org = await this.orgs.byRef(entry.target_org, trx);
      if (org && !org.deleted) domain = { orgId: org.id, role: entry.role };
    }
    return { user, inviteOrgs, domain };
  }
}
