import { Conflict } from '../../core/errors.ts';
import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';
import { SshKeyError, parsePublicKey } from '../../domain/signatures/ssh.ts';

interface KeyRow {
  id: string;
  user_id: string;
  type: string;
  public_key: string;
  fingerprint: string;
  label: string | null;
  created_at: Date;
}

const toKey = (r: KeyRow) => ({ id: r.id, type: r.type, fingerprint: r.fingerprint, label: r.label, created_at: r.created_at });

/** SSH public keys registered to accounts; a key (by fingerprint) belongs to one account only. */
@injectable()
export class UserKeys {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  async add(userId: string, line: string, label: string | null, trx: Db = this.db, opts: { allowOwnDuplicate?: boolean } = {}) {
    let key;
    try {
      key = parsePublicKey(line);
    } catch (e) {
      if (e instanceof SshKeyError) throw Boom.badRequest(`"public_key" ${e.message}`);
      throw e;
    }
    const existing: KeyRow | undefined = await trx('user_keys').where({ fingerprint: key.fingerprint }).first();
    if (existing) {
      if (opts.allowOwnDuplicate && existing.user_id === userId) return toKey(existing);
      throw new Conflict(`key ${key.fingerprint} is already registered`);
    }
    const [row] = await trx('user_keys')
      .insert({ id: newId('key'), user_id: userId, type: key.type, public_key: key.openssh, fingerprint: key.fingerprint, label: label ?? key.comment })
      .onConflict('fingerprint')
      .ignore()
      .returning('*');
    if (!row) throw new Conflict(`key ${key.fingerprint} is already registered`);
    return toKey(row);
  }

  list(userId: string, page: Pick<ListQuery, 'limit' | 'offset'>) {
    return paginate<KeyRow, ReturnType<typeof toKey>>(this.db('user_keys').where({ user_id: userId }), page, toKey, 'user_keys');
  }

  async remove(userId: string, keyId: string): Promise<void> {
    const removed = await this.db('user_keys').where({ id: keyId, user_id: userId }).delete();
    if (!removed) throw Boom.notFound(`key ${keyId} not found`);
  }

  /** The user's key with this fingerprint, if registered. */
  findForUser(userId: string, fingerprint: string): Promise<KeyRow | undefined> {
    return this.db('user_keys').where({ user_id: userId, fingerprint }).first();
  }
}
