import type { Knex } from 'knex';

/**
 * Access tokens svc obtained by refreshing a harness family's OAuth login (docs/harnesses.md, "OAuth
 * logins that refresh"). A row belongs to one stored refresh token, named by a hash of its family and value (the
 * secret itself stays with the secrets domain); it holds the access token and the refresh token
 * that replaced the stored one, both sealed with the master key, and when the access token expires.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('harness_oauth_tokens', (t) => {
    t.text('family').notNullable();
    t.text('seed_hash').notNullable();
    t.text('access_token_sealed').notNullable();
    t.text('refresh_token_sealed').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('refreshed_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.primary(['seed_hash']);
  });
}
