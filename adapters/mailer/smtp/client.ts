import { connect, type Socket } from 'node:net';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { MailMessage } from '../../../core/ports/mail.ts';

export type SmtpOptions = {
  host: string;
  port: number;
  from: string;
  /** AUTH PLAIN when both are set (only over a connection the operator trusts: this client speaks plain SMTP). */
  username: string | null;
  password: string | null;
  timeout_ms: number;
};

export class SmtpError extends Error {}

/** Reads SMTP replies: a reply is lines `NNN-text` ended by one `NNN text`. */
class Replies {
  private buffer = '';
  private waiting: { resolve: (r: { code: number; text: string }) => void; reject: (e: Error) => void } | null = null;
  private failure: Error | null = null;

  constructor(socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      this.flush();
    });
    const fail = (e: Error) => {
      this.failure = e;
      this.waiting?.reject(e);
      this.waiting = null;
    };
    socket.on('error', (e) => fail(new SmtpError(`SMTP connection failed: ${e.message}`)));
    socket.on('close', () => fail(new SmtpError('the SMTP server closed the connection')));
  }

  next(): Promise<{ code: number; text: string }> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.flush();
    });
  }

  private flush(): void {
    if (!this.waiting) return;
    const lines = this.buffer.split('\r\n');
    for (let i = 0; i < lines.length - 1; i++) {
      const m = /^(\d{3})([ -])(.*)$/.exec(lines[i]);
      if (m && m[2] === ' ') {
        const text = lines
          .slice(0, i + 1)
          .map((l) => l.slice(4))
          .join('\n');
        this.buffer = lines.slice(i + 1).join('\r\n');
        const waiting = this.waiting;
        this.waiting = null;
        waiting.resolve({ code: Number(m[1]), text });
        return;
      }
    }
  }
}

/** Header values never carry a line break (no header injection from a subject or an address). */
const headerValue = (v: string) => v.replace(/[\r\n]+/g, ' ');

/** CRLF line ends, leading dots doubled (DATA transparency). */
const dataLines = (text: string) =>
  text
    .replace(/\r?\n/g, '\r\n')
    .split('\r\n')
    .map((l) => (l.startsWith('.') ? `.${l}` : l))
    .join('\r\n');

/**
 * The message as sent in DATA: headers, a blank line, the body with CRLF line ends and leading dots
 * doubled; with `html`, a multipart/alternative of the text and the HTML.
 */
export function formatMessage(from: string, message: MailMessage, date = new Date()): string {
  const domain = from.split('@')[1] ?? 'localhost';
  const headers = [
    `From: ${headerValue(from)}`,
    `To: ${headerValue(message.to)}`,
    `Subject: ${headerValue(message.subject)}`,
    `Date: ${date.toUTCString()}`,
    `Message-ID: <${randomBytes(12).toString('hex')}@${domain}>`,
    'MIME-Version: 1.0',
  ];
  const part = (type: string) => [`Content-Type: ${type}; charset=utf-8`, 'Content-Transfer-Encoding: 8bit'];
  if (message.html === undefined) return `${[...headers, ...part('text/plain')].join('\r\n')}\r\n\r\n${dataLines(message.text)}\r\n`;
  const boundary = `=_svc_${randomBytes(12).toString('hex')}`;
  const body = [
    `--${boundary}`,
    ...part('text/plain'),
    '',
    dataLines(message.text),
    `--${boundary}`,
    ...part('text/html'),
    '',
    dataLines(message.html),
    `--${boundary}--`,
  ];
  return `${[...headers, `Content-Type: multipart/alternative; boundary="${boundary}"`].join('\r\n')}\r\n\r\n${body.join('\r\n')}\r\n`;
}

/** One mail over one SMTP session: EHLO, AUTH PLAIN if configured, MAIL, RCPT, DATA, QUIT. */
export async function sendMail(options: SmtpOptions, message: MailMessage): Promise<void> {
  if (/[\r\n<>]/.test(message.to) || /[\r\n<>]/.test(options.from)) throw new SmtpError('a mail address may not contain line breaks or angle brackets');
  const socket = connect({ host: options.host, port: options.port });
  socket.setTimeout(options.timeout_ms, () => socket.destroy(new Error(`no answer within ${options.timeout_ms} ms`)));
  const replies = new Replies(socket);
  const expect = async (codes: number[], step: string) => {
    const reply = await replies.next();
    if (!codes.includes(reply.code)) throw new SmtpError(`SMTP ${step} refused: ${reply.code} ${reply.text}`);
    return reply;
  };
  const command = async (line: string, codes: number[], step: string) => {
    socket.write(`${line}\r\n`);
    return expect(codes, step);
  };
  try {
    await expect([220], 'greeting');
    await command(`EHLO ${hostname() || 'svc'}`, [250], 'EHLO');
    if (options.username && options.password) {
      const token = Buffer.from(`\0${options.username}\0${options.password}`).toString('base64');
      await command(`AUTH PLAIN ${token}`, [235], 'AUTH');
    }
    await command(`MAIL FROM:<${options.from}>`, [250], 'MAIL FROM');
    await command(`RCPT TO:<${message.to}>`, [250, 251], 'RCPT TO');
    await command('DATA', [354], 'DATA');
    socket.write(`${formatMessage(options.from, message)}.\r\n`);
    await expect([250], 'message');
    await command('QUIT', [221], 'QUIT').catch(() => undefined);
  } finally {
    socket.destroy();
  }
}
