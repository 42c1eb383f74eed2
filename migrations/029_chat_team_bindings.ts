import type { Knex } from 'knex';

/**
 * Chat team bindings (integrations domain): which org a chat team belongs to, proven by the team
 * posting a one-time code the org asked for (docs/integrations.md, "Binding a chat team"). A team
 * has at most one binding; routes of other orgs for it are never used.
 *
 * Existing routes: a team that projects of exactly one org route is bound to that org here
 * (`bound_via = 'migration'`), so it keeps working. A team routed by two or more orgs (route creation
 * refused that under a per-team lock; rows written by hand or by an older build may exist) gets no binding: its messages are not stored until one
 * org binds it through a code, and then only that org's routes receive them.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('chat_team_bindings', (t) => {
    t.text('team_id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('bound_via').notNullable();
    t.text('bound_by');
    t.text('requested_by');
    t.timestamp('bound_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['org_id']);
  });
  await db.raw("ALTER TABLE chat_team_bindings ADD CONSTRAINT chat_team_bindings_via_check CHECK (bound_via IN ('code', 'migration'))");
  await db.schema.createTable('chat_team_binding_codes', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('team_id').notNullable();
    t.text('code_hash').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['team_id']);
  });
  await db.raw(`
    INSERT INTO chat_team_bindings (team_id, org_id, bound_via, bound_at)
    SELECT team_id, min(org_id), 'migration', min(created_at)
    FROM chat_routes
    GROUP BY team_id
    HAVING count(DISTINCT org_id) = 1`);
}
