import type { Knex } from 'knex';

/**
 * Org documents, versioned: a document is a path in its org (unique among live documents, so a
 * deleted one frees its path) that points at its current version; every write adds a version with
 * the full content and its sha256. Versions are never changed or removed while the document exists.
 * (Job attachments, the other kind of resource a job can reference, live in `job_attachments`.)
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('org_docs', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('project_id').references('projects.id').onDelete('CASCADE');
    t.text('path').notNullable();
    t.integer('current_version').notNullable();
    t.boolean('deleted').notNullable().defaultTo(false);
    t.timestamp('deleted_at', { useTz: true });
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['org_id', 'created_at']);
  });
  await db.raw('CREATE UNIQUE INDEX org_docs_live_path ON org_docs (org_id, path) WHERE NOT deleted');
  await db.raw('ALTER TABLE org_docs ADD CONSTRAINT org_docs_current_version_check CHECK (current_version >= 1)');

  await db.schema.createTable('org_doc_versions', (t) => {
    t.text('id').primary();
    t.text('doc_id').notNullable().references('org_docs.id').onDelete('CASCADE');
    t.integer('version').notNullable();
    t.text('content').notNullable();
    t.integer('size_bytes').notNullable();
    t.text('content_hash').notNullable();
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.unique(['doc_id', 'version']);
  });
  await db.raw('ALTER TABLE org_doc_versions ADD CONSTRAINT org_doc_versions_version_check CHECK (version >= 1)');
}
