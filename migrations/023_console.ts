import type { Knex } from 'knex';

/**
 * One-time login links of the web console (`svc console`). A row holds the SHA-256 of the code, never
 * the code; the session it opens is for `user_id`, with the scope and role cap of the token that made
 * the link, and lasts until `session_expires_at` (that token's own expiry). A link is deleted when it
 * is used or once it has expired.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('console_login_links', (t) => {
    t.text('code_hash').primary();
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('scope_type');
    t.text('scope_id');
    t.text('role');
    t.timestamp('session_expires_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['expires_at']);
  });
}
