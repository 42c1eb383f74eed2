import Joi from 'joi';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { timestamp, userId } from '../../core/http/schemas.ts';
import type { UserDirectory, UserEntry } from '../../core/ports/directory.ts';

/** A row of `users` as the directory hands it out: never the password hash of app logins. */
export type UserRow = UserEntry;
const COLUMNS = ['id', 'email', 'display_name', 'is_admin', 'created_at', 'updated_at'];

export const userResponseSchema = Joi.object({
  id: userId.required(),
  email: Joi.string().required(),
  display_name: Joi.string().allow(null).required(),
  is_admin: Joi.boolean().required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('User');

export const toUser = (row: UserRow) => ({
  id: row.id,
  email: row.email,
  display_name: row.display_name,
  is_admin: row.is_admin,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** Accounts, keyed by e-mail (case-insensitive). Users are never created by any other path; other domains reach them through UserDirectory. */
@injectable()
export class Users implements UserDirectory {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  findByEmail(email: string, trx: Db = this.db): Promise<UserRow | undefined> {
    return trx('users').whereRaw('lower(email) = lower(?)', [email]).first(COLUMNS);
  }

  findById(id: string, trx: Db = this.db): Promise<UserRow | undefined> {
    return trx('users').where({ id }).first(COLUMNS);
  }

  /** The scrypt hash of the account's app password, null without one (plugins/auth/passwords.ts). */
  async passwordHash(email: string, trx: Db = this.db): Promise<string | null> {
    const row = await trx('users').whereRaw('lower(email) = lower(?)', [email]).first('password_hash');
    return row?.password_hash ?? null;
  }

  /** Finds the user with this e-mail or creates one; safe when two requests race. */
  async ensure(email: string, displayName: string | null = null, trx: Db = this.db): Promise<{ user: UserRow; created: boolean }> {
    const [inserted] = await trx('users')
      .insert({ id: newId('usr'), email: email.toLowerCase(), display_name: displayName })
      .onConflict(trx.raw('(lower(email))'))
      .ignore()
      .returning(COLUMNS);
    if (inserted) return { user: inserted, created: true };
    return { user: (await this.findByEmail(email, trx))!, created: false };
  }
}
