import type { Knex } from 'knex';

export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('system_state', (t) => {
    t.text('key').primary();
    t.jsonb('value').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });

  await db.schema.createTable('signing_keys', (t) => {
    t.text('kid').primary();
    t.text('alg').notNullable();
    t.jsonb('public_jwk').notNullable();
    t.text('private_key_enc').notNullable();
    t.boolean('active').notNullable().defaultTo(true);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('retired_at', { useTz: true });
  });
  // At most one key signs new tokens; retired ones stay published until their tokens expire.
  await db.raw('CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (active) WHERE active');

  await db.schema.createTable('users', (t) => {
    t.text('id').primary();
    t.text('email').notNullable();
    t.text('display_name');
    t.boolean('is_admin').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
  await db.raw('CREATE UNIQUE INDEX users_email_unique ON users (lower(email))');

  await db.schema.createTable('user_keys', (t) => {
    t.text('id').primary();
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.text('public_key').notNullable();
    t.text('fingerprint').notNullable().unique();
    t.text('label');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['user_id']);
  });

  await db.schema.createTable('auth_challenges', (t) => {
    t.text('id').primary();
    t.text('email').notNullable();
    t.text('nonce').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });

  await db.schema.createTable('orgs', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.text('slug').notNullable().unique();
    t.boolean('deleted').notNullable().defaultTo(false);
    t.timestamp('deleted_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['created_at']);
  });

  await db.schema.createTable('org_members', (t) => {
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('role').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.primary(['org_id', 'user_id']);
    t.index(['user_id']);
  });

  await db.schema.createTable('projects', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('slug').notNullable().unique();
    t.text('repo_url');
    t.text('branch').notNullable().defaultTo('main');
    t.boolean('deleted').notNullable().defaultTo(false);
    t.timestamp('deleted_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['org_id', 'created_at']);
  });

  await db.schema.createTable('project_members', (t) => {
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('role').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.primary(['project_id', 'user_id']);
    t.index(['user_id']);
  });

  for (const c of ['org_members', 'project_members']) {
    await db.raw(`ALTER TABLE ${c} ADD CONSTRAINT ${c}_role_check CHECK (role IN ('owner', 'admin', 'member'))`);
  }
}
