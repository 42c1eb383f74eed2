import type { MailMessage } from '../../core/ports/mail.ts';

export interface InviteMailFacts {
  email: string;
  code: string;
  orgName: string;
  role: string;
  expiresAt: Date;
  /** The server's public address; null: the mail names the route alone. */
  publicUrl: string | null;
  redirectUrl: string | null;
  /** App branding of an app invite: its name and support address speak for the app. */
  app: { app_name: string; support_email?: string } | null;
}

/** The invite mail: who invites to what, the code, how to accept it, until when. */
export function inviteMail(f: InviteMailFacts): MailMessage {
  const product = f.app?.app_name ?? 'svc';
  const accept = `${f.publicUrl ? f.publicUrl.replace(/\/+$/, '') : ''}/auth/invites/${f.code}/accept`;
  const lines = [
    `You are invited to join ${f.orgName} on ${product} as ${f.role}.`,
    '',
    `Your invite code: ${f.code}`,
    '',
    `Sign in with this address (${f.email}) and the invite applies by itself, or accept it once signed in: POST ${accept}`,
    ...(f.redirectUrl ? ['', `Then continue at ${f.redirectUrl}`] : []),
    '',
    `The code works once, until ${f.expiresAt.toISOString()}.`,
    ...(f.app?.support_email ? ['', `Questions: ${f.app.support_email}`] : []),
  ];
  return { to: f.email, subject: `${product}: invitation to ${f.orgName}`, text: lines.join('\n') };
}

export interface MagicLinkMailFacts {
  email: string;
  /** `<link id>.<secret>`: mailed once, stored only as a hash. */
  token: string;
  branding: { app_name: string; support_email: string | null };
  expiresAt: Date;
  publicUrl: string | null;
  /** The app page that finishes sign-in; the token goes in the fragment, so it reaches no server log. */
  redirectUrl: string | null;
}

/** The sign-in mail of an app: a link to the app (or the token and the route that takes it), once, for minutes. */
export function magicLinkMail(f: MagicLinkMailFacts): MailMessage {
  const app = f.branding.app_name;
  const params = new URLSearchParams({ token: f.token, email: f.email }).toString();
  const verify = `${f.publicUrl ? f.publicUrl.replace(/\/+$/, '') : ''}/auth/magic-link/verify`;
  const lines = [
    `Sign in to ${app} as ${f.email}:`,
    '',
    f.redirectUrl ? `${f.redirectUrl.split('#')[0]}#${params}` : `Your sign-in token: ${f.token}\n\nPOST ${verify} with this token and your e-mail.`,
    '',
    `The link works once, until ${f.expiresAt.toISOString()}. If you did not ask to sign in, ignore this mail.`,
    ...(f.branding.support_email ? ['', `Questions: ${f.branding.support_email}`] : []),
  ];
  return { to: f.email, subject: `${app}: your sign-in link`, text: lines.join('\n') };
}
