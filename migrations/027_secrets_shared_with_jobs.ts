import type { Knex } from 'knex';

/**
 * `shared_with_jobs` on secrets (secrets domain): whether a system secret resolves into jobs of every
 * org. False for every existing row, so a system secret that reached jobs before no longer does until
 * a system admin marks it (docs/security.md, "System secrets and jobs"). Only system secrets carry it:
 * project, org and user secrets reach their own jobs as before.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('secrets', (t) => {
    t.boolean('shared_with_jobs').notNullable().defaultTo(false);
  });
  await db.raw("ALTER TABLE secrets ADD CONSTRAINT secrets_shared_with_jobs_check CHECK (scope = 'system' OR NOT shared_with_jobs)");
}
