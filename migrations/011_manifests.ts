import type { Knex } from 'knex';

/** Every synced version of a project's manifest; the newest is the current one. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('manifests', (t) => {
    t.bigIncrements('id').primary();
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('manifest_hash').notNullable();
    t.text('git_sha');
    t.text('ref');
    t.text('yaml').notNullable();
    t.jsonb('parsed').notNullable();
    t.timestamp('synced_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.text('synced_by');
    t.index(['project_id', 'manifest_hash']);
  });
  await db.raw('CREATE INDEX manifests_current ON manifests (project_id, id DESC)');
  await db.raw(`ALTER TABLE manifests ADD CONSTRAINT manifests_git_sha_check CHECK (git_sha IS NULL OR git_sha ~ '^[0-9a-f]{40}$')`);
}
