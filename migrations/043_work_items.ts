import type { Knex } from 'knex';

/**
 * work_items: the durable work engine's queue (core/work, docs/architecture.md "Work engine"). One row
 * per unit of background work a domain hands over (a deploy, a build run), keyed by the domain's own id.
 * A claim leases a row to one owner with a token; every write of the owner names the token, so an owner
 * whose lease was reaped changes nothing. Direct deploys left `running` by a process that ended before
 * this engine existed have no item to finish them: they end as failed here.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('work_items', (t) => {
    t.bigIncrements('id').primary();
    t.text('queue').notNullable();
    t.text('key').notNullable();
    t.jsonb('payload').notNullable().defaultTo('{}');
    t.text('status').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.integer('max_attempts').notNullable();
    t.timestamp('run_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.uuid('lease_token');
    t.text('lease_owner');
    t.timestamp('lease_expires_at', { useTz: true });
    t.boolean('cancel_requested').notNullable().defaultTo(false);
    t.text('last_error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('finished_at', { useTz: true });
    t.unique(['queue', 'key']);
  });
  await db.raw(`ALTER TABLE work_items ADD CONSTRAINT work_items_status CHECK (status IN ('queued', 'running', 'done', 'dead', 'cancelled'))`);
  await db.raw(
    `ALTER TABLE work_items ADD CONSTRAINT work_items_lease CHECK ((status = 'running') = (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL))`,
  );
  await db.raw(`CREATE INDEX work_items_due ON work_items (queue, run_at, id) WHERE status = 'queued'`);
  await db.raw(`CREATE INDEX work_items_leases ON work_items (queue, lease_expires_at) WHERE status = 'running'`);
  await db.raw(`CREATE INDEX work_items_finished ON work_items (finished_at) WHERE finished_at IS NOT NULL`);
  await db('environment_deploys')
    .where({ status: 'running', direct: true })
    .update({ status: 'failed', error_message: 'the process running this deploy ended before it finished (deploy again)', completed_at: db.fn.now() });
}
