import type { Knex } from 'knex';

/**
 * A deploy's log (environments domain): what svc did (`system`: started, the release, succeeded or
 * failed and why) and what the deployer reported (`deployer`: per service the image, the
 * container or Deployment, the wait for health, the rollout), by seq from 1. Removed with the
 * deploy; a deploy keeps at most a bounded number of lines (plugins/environments/deploy-logs.ts).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('environment_deploy_logs', (t) => {
    t.text('deploy_id').notNullable().references('environment_deploys.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.text('stream').notNullable();
    t.text('line').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.primary(['deploy_id', 'seq']);
  });
  await db.raw("ALTER TABLE environment_deploy_logs ADD CONSTRAINT environment_deploy_logs_stream_check CHECK (stream IN ('system', 'deployer'))");
}
