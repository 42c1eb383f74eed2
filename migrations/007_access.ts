import type { Knex } from 'knex';

/**
 * Access control beyond memberships: custom roles, groups, bindings of a role to a user, service
 * account or group (org-wide or for one project), and service accounts with revocable tokens.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('access_roles', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description');
    t.text('scope').notNullable();
    t.specificType('permissions', 'text[]').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.unique(['org_id', 'name']);
  });
  await db.raw(`ALTER TABLE access_roles ADD CONSTRAINT access_roles_scope_check CHECK (scope IN ('org', 'project'))`);

  await db.schema.createTable('access_groups', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.unique(['org_id', 'name']);
  });
  await db.schema.createTable('access_group_members', (t) => {
    t.text('group_id').notNullable().references('access_groups.id').onDelete('CASCADE');
    t.text('principal_type').notNullable();
    t.text('principal_id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.primary(['group_id', 'principal_type', 'principal_id']);
    t.index(['principal_type', 'principal_id']);
  });
  await db.raw(`ALTER TABLE access_group_members ADD CONSTRAINT access_group_members_type_check CHECK (principal_type IN ('user', 'service_account'))`);

  await db.schema.createTable('service_accounts', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.unique(['org_id', 'name']);
  });
  await db.schema.createTable('service_account_tokens', (t) => {
    t.text('id').primary();
    t.text('service_account_id').notNullable().references('service_accounts.id').onDelete('CASCADE');
    t.text('name');
    t.text('scope_type').notNullable();
    t.text('scope_id').notNullable();
    t.specificType('permissions', 'text[]').notNullable();
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true });
    t.index(['service_account_id']);
  });

  // `role` is a built-in role name or a custom role id (access_roles.id).
  await db.schema.createTable('access_bindings', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('role').notNullable();
    t.text('principal_type').notNullable();
    t.text('principal_id').notNullable();
    t.text('project_id').references('projects.id').onDelete('CASCADE');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['org_id', 'principal_type', 'principal_id']);
  });
  await db.raw(`ALTER TABLE access_bindings ADD CONSTRAINT access_bindings_type_check CHECK (principal_type IN ('user', 'service_account', 'group'))`);
  await db.raw(`CREATE UNIQUE INDEX access_bindings_unique ON access_bindings (org_id, role, principal_type, principal_id, coalesce(project_id, ''))`);
}
