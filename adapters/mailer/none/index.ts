/** Mailer of servers that send no mail (the default): nothing goes out, and callers say so (`email_sent: false`). */
import Joi from 'joi';
import type { Mailer } from '../../../core/ports/mail.ts';
import { defineAdapter } from '../../../core/sdk.ts';

export default defineAdapter<Mailer>({
  kind: 'mailer',
  name: 'none',
  options: Joi.object({}),
  create: () => ({ name: 'none', send: async () => ({ sent: false }) }),
});
