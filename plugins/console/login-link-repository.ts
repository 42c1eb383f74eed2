import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';

export interface LoginLinkRow {
  code_hash: string;
  user_id: string;
  scope_type: 'org' | 'project' | null;
  scope_id: string | null;
  role: string | null;
  session_expires_at: Date;
  expires_at: Date;
}

/** The SQL of `console_login_links`. */
@injectable()
export class LoginLinkRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  async insert(row: LoginLinkRow): Promise<void> {
    await this.db('console_login_links').insert(row);
  }

  /** Deletes and returns the unexpired link with this code hash: the one use it has. */
  async take(codeHash: string): Promise<LoginLinkRow | undefined> {
    const [row] = await this.db('console_login_links').where({ code_hash: codeHash }).andWhere('expires_at', '>', this.db.fn.now()).del('*');
    return row as LoginLinkRow | undefined;
  }

  async deleteExpired(): Promise<number> {
    return this.db('console_login_links').where('expires_at', '<=', this.db.fn.now()).del();
  }
}
