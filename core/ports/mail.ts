import type { InjectionToken } from 'tsyringe';

/** One mail: plain text, and optionally the same as HTML (sent as multipart/alternative). */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/**
 * Sends mail (invites, sign-in links). Config `adapters.mailer`: `none` (the default: nothing is
 * sent, `sent` is false) or `smtp`. A failure to send is thrown; callers decide what it means.
 */
export interface Mailer {
  readonly name: string;
  /** False when the adapter sends nothing (none). */
  send(message: MailMessage): Promise<{ sent: boolean }>;
}

export const MailerToken = Symbol('Mailer') as InjectionToken<Mailer>;
