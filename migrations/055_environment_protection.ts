import type { Knex } from 'knex';

/**
 * Environment protection (docs/environments.md): an environment holds the manifest's `protection`;
 * a deploy to a protected one keeps the rules it was created under, may wait for approval
 * (`awaiting_approval`) or for its wait timer (`waiting`, until `run_after`), and may end `rejected`.
 * Each reviewer's approval or rejection is a row of environment_deploy_reviews. A deploy through a
 * pipeline that waits keeps what it will start the pipeline with (`pipeline_request`).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('environments', (t) => t.jsonb('protection'));
  await db.schema.alterTable('environment_deploys', (t) => {
    t.jsonb('protection');
    t.timestamp('run_after', { useTz: true });
    t.jsonb('pipeline_request');
  });
  await db.raw('ALTER TABLE environment_deploys DROP CONSTRAINT environment_deploys_status_check');
  await db.raw(
    "ALTER TABLE environment_deploys ADD CONSTRAINT environment_deploys_status_check CHECK (status IN ('awaiting_approval', 'waiting', 'running', 'succeeded', 'failed', 'rejected', 'pipeline'))",
  );
  await db.schema.createTable('environment_deploy_reviews', (t) => {
    t.text('deploy_id').notNullable().references('environment_deploys.id').onDelete('CASCADE');
    t.text('user_id').notNullable();
    t.text('decision').notNullable();
    t.text('comment');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.primary(['deploy_id', 'user_id']);
  });
  await db.raw("ALTER TABLE environment_deploy_reviews ADD CONSTRAINT environment_deploy_reviews_decision_check CHECK (decision IN ('approved', 'rejected'))");
}
