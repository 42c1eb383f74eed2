import type { Knex } from 'knex';

/**
 * Nostr-style identity: hex x-only secp256k1 public keys on accounts, Schnorr login challenges,
 * and the ids of request-signature events already used (each is accepted once).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('user_nostr_keys', (t) => {
    t.text('id').primary();
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('pubkey').notNullable().unique(); // 64 lower-case hex characters
    t.text('label');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['user_id']);
  });

  await db.schema.createTable('nostr_challenges', (t) => {
    t.text('id').primary();
    t.text('email'); // exactly one of email and pubkey is set
    t.text('pubkey');
    t.text('nonce').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
  await db.raw('ALTER TABLE nostr_challenges ADD CONSTRAINT nostr_challenges_one_subject CHECK ((email IS NULL) <> (pubkey IS NULL))');

  await db.schema.createTable('nostr_seen_events', (t) => {
    t.text('id').primary(); // event id, 64 hex
    t.timestamp('expires_at', { useTz: true }).notNullable().index();
  });
}
