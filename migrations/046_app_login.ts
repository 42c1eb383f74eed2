import type { Knex } from 'knex';

/**
 * App-side login (x-svc.auth, docs/app-login.md): single-use sign-in links, stored as a SHA-256 of
 * their secret (the link itself is mailed once, never stored); an account's optional password
 * (scrypt, for apps whose login_method allows one); and what made an invite (`domain_signup` for the
 * one-shot invite a matching e-mail domain gets on its first sign-in).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('magic_links', (t) => {
    t.text('id').primary();
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('email').notNullable();
    t.text('secret_hash').notNullable();
    t.text('redirect_url');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['expires_at']);
  });
  await db.schema.alterTable('users', (t) => t.text('password_hash'));
  await db.schema.alterTable('invites', (t) => t.text('source'));
}
