import type { Knex } from 'knex';

/**
 * Chat routes: which project receives the events of a chat team (all its channels, or one). A
 * (team, channel) pair routes to one project; a team-wide route has no channel.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('chat_routes', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('team_id').notNullable();
    t.text('channel');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['project_id', 'created_at']);
  });
  await db.raw(`CREATE UNIQUE INDEX chat_routes_team_channel ON chat_routes (team_id, coalesce(channel, ''))`);
}
