import type { Knex } from 'knex';

/**
 * Secrets at four scopes. The owner is one of three foreign keys (none for system), so a hard
 * deleted user takes their secrets along; the check keeps scope and owner column in agreement.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('secrets', (t) => {
    t.bigIncrements('id').primary();
    t.text('scope').notNullable();
    t.text('project_id').references('projects.id').onDelete('CASCADE');
    t.text('org_id').references('orgs.id').onDelete('CASCADE');
    t.text('user_id').references('users.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('type').notNullable();
    t.text('value_enc').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['project_id']);
    t.index(['org_id']);
    t.index(['user_id']);
  });
  await db.raw(`ALTER TABLE secrets ADD CONSTRAINT secrets_scope_check CHECK (
    (scope = 'project' AND project_id IS NOT NULL AND org_id IS NULL AND user_id IS NULL) OR
    (scope = 'org' AND org_id IS NOT NULL AND project_id IS NULL AND user_id IS NULL) OR
    (scope = 'user' AND user_id IS NOT NULL AND project_id IS NULL AND org_id IS NULL) OR
    (scope = 'system' AND project_id IS NULL AND org_id IS NULL AND user_id IS NULL))`);
  await db.raw(`ALTER TABLE secrets ADD CONSTRAINT secrets_type_check CHECK (type IN ('env', 'file', 'code_host_token', 'ssh_key'))`);
  await db.raw(`CREATE UNIQUE INDEX secrets_name_unique ON secrets (scope, coalesce(project_id, org_id, user_id, ''), name)`);
}
