import type { MailMessage } from '../../core/ports/mail.ts';

/** Who a mail speaks for: an app's x-svc.branding, or svc itself. */
export interface MailBrand {
  app_name: string;
  primary_color?: string | null;
  support_email?: string | null;
}

const SVC_BRAND: MailBrand = { app_name: 'svc' };
const DEFAULT_COLOR = '#1f2933';
/** Only a #rgb / #rrggbb colour reaches the HTML (the manifest does not check the value). */
const COLOR = /^#(?:[0-9a-fA-F]{3}){1,2}$/;

const escapeHtml = (v: string) => v.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A mail in the brand's name: the text as given, the support address last, and an HTML twin headed by the app name in its colour. */
function branded(to: string, subject: string, lines: string[], brand: MailBrand): MailMessage {
  const all = [...lines, ...(brand.support_email ? ['', `Questions: ${brand.support_email}`] : [])];
  const color = brand.primary_color && COLOR.test(brand.primary_color) ? brand.primary_color : DEFAULT_COLOR;
  const paragraphs = all
    .join('\n')
    .split(/\n{2,}/)
    .map((p) => `<p style="margin:0 0 12px">${escapeHtml(p).replace(/\n/g, '<br>')}</p>`);
  const html = [
    '<!doctype html><html><body style="margin:0;font-family:sans-serif;color:#1f2933">',
    `<div style="background:${color};color:#ffffff;padding:12px 16px;font-size:18px;font-weight:bold">${escapeHtml(brand.app_name)}</div>`,
    `<div style="padding:16px">${paragraphs.join('')}</div>`,
    '</body></html>',
  ].join('\n');
  return { to, subject: `${brand.app_name}: ${subject}`, text: all.join('\n'), html };
}

export interface InviteMailFacts {
  email: string;
  code: string;
  orgName: string;
  role: string;
  expiresAt: Date;
  /** The server's public address; null: the mail names the route alone. */
  publicUrl: string | null;
  redirectUrl: string | null;
  /** App branding of an app invite: its name, colour and support address speak for the app. */
  app: MailBrand | null;
}

/** The invite mail: who invites to what, the code, how to accept it, until when. */
export function inviteMail(f: InviteMailFacts): MailMessage {
  const brand = f.app ?? SVC_BRAND;
  const product = brand.app_name;
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
  ];
  return branded(f.email, `invitation to ${f.orgName}`, lines, brand);
}

export interface MagicLinkMailFacts {
  email: string;
  /** `<link id>.<secret>`: mailed once, stored only as a hash. */
  token: string;
  branding: MailBrand;
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
  ];
  return branded(f.email, 'your sign-in link', lines, f.branding);
}
