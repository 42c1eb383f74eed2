/** Mailer that sends through an SMTP server (plain SMTP, optional AUTH PLAIN): `adapters.mailer: { use: smtp, options: {host, port, from} }`. */
import Joi from 'joi';
import type { Mailer } from '../../../core/ports/mail.ts';
import { defineAdapter } from '../../../core/sdk.ts';
import { sendMail, type SmtpOptions } from './client.ts';

export default defineAdapter<Mailer, SmtpOptions>({
  kind: 'mailer',
  name: 'smtp',
  options: Joi.object({
    host: Joi.string().required(),
    port: Joi.number().integer().min(1).max(65535).default(25),
    from: Joi.string().email({ tlds: false }).required(),
    username: Joi.string().allow(null).default(null),
    password: Joi.string().allow(null).default(null),
    timeout_ms: Joi.number().integer().min(100).default(10_000),
  }),
  create: (options) => ({
    name: 'smtp',
    send: async (message) => {
      await sendMail(options, message);
      return { sent: true };
    },
  }),
});
