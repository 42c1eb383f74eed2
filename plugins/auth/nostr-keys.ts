import { Conflict } from '../../core/errors.ts';
import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';

export interface NostrKeyRow {
  id: string;
  user_id: string;
  pubkey: string;
  label: string | null;
  created_at: Date;
}

export const toNostrKey = (r: NostrKeyRow) => ({ id: r.id, type: 'nostr' as const, pubkey: r.pubkey, label: r.label, created_at: r.created_at });

/** Hex x-only secp256k1 public keys registered to accounts; a key belongs to one account only. */
@injectable()
export class NostrKeys {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  /** `pubkey` must already be 64 hex characters (the route validates); it is stored lower-case. */
  async add(userId: string, pubkey: string, label: string | null, trx: Db = this.db, opts: { allowOwnDuplicate?: boolean } = {}) {
    const key = pubkey.toLowerCase();
    const [row] = await trx('user_nostr_keys')
      .insert({ id: newId('key'), user_id: userId, pubkey: key, label })
      .onConflict('pubkey')
      .ignore()
      .returning('*');
    if (row) return toNostrKey(row);
    const existing = await this.find(key, trx);
    if (opts.allowOwnDuplicate && existing?.user_id === userId) return toNostrKey(existing);
    throw new Conflict(`nostr key ${key} is already registered`);
  }

  list(userId: string, page: Pick<ListQuery, 'limit' | 'offset'>) {
    return paginate<NostrKeyRow, ReturnType<typeof toNostrKey>>(this.db('user_nostr_keys').where({ user_id: userId }), page, toNostrKey, 'user_nostr_keys');
  }

  async remove(userId: string, keyId: string): Promise<void> {
    const removed = await this.db('user_nostr_keys').where({ id: keyId, user_id: userId }).delete();
    if (!removed) throw Boom.notFound(`nostr key ${keyId} not found`);
  }

  /** Whoever has this key registered, if anyone. */
  find(pubkey: string, trx: Db = this.db): Promise<NostrKeyRow | undefined> {
    return trx('user_nostr_keys').where({ pubkey: pubkey.toLowerCase() }).first();
  }
}
