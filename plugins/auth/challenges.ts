import { randomBytes } from 'node:crypto';
import Boom from '@hapi/boom';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';

/**
 * Login challenges (SSH and nostr keep them in their own tables): a random nonce that expires,
 * consumed by the first verify whatever its outcome, so a nonce cannot be tried twice.
 */
export async function issueChallenge<F extends Record<string, unknown>>(db: Db, table: string, fields: F, now: Date, ttlSeconds: number) {
  const row = { id: newId('chl'), ...fields, nonce: randomBytes(32).toString('base64url'), expires_at: new Date(now.getTime() + ttlSeconds * 1000) };
  await db(table).insert(row);
  return row;
}

/** Marks the challenge used and answers it; unknown, used or expired: 401. */
export async function consumeChallenge<R extends { nonce: string; expires_at: Date | string }>(db: Db, table: string, id: string, now: Date): Promise<R> {
  const [challenge]: R[] = await db(table).where({ id }).whereNull('used_at').update({ used_at: db.fn.now() }).returning('*');
  if (!challenge) throw Boom.unauthorized('challenge unknown or already used');
  if (new Date(challenge.expires_at).getTime() <= now.getTime()) throw Boom.unauthorized('challenge expired');
  return challenge;
}
