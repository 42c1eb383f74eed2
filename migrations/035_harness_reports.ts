import type { Knex } from 'knex';

/**
 * What each worker process says it can run (docs/harnesses.md, "Refused at create"): one row per
 * worker, replaced at its start and every `worker.harness_report_seconds`, removed when it stops.
 * `harnesses` maps a harness id to `{available, missing, command, reason}` as the worker's own
 * availability check found it; `expires_at` is when the report stops counting (a worker that died
 * without saying so). Job creation reads the fresh rows, through the harnesses domain, to refuse a
 * job whose harness no worker can run.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('harness_reports', (t) => {
    t.text('worker_id').primary();
    t.jsonb('harnesses').notNullable();
    t.timestamp('reported_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
  });
}
