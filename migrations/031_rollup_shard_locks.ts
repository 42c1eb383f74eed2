import type { Knex } from 'knex';

/**
 * The rollup triggers of 025 add to one row per (key, shard) in each transaction's row order, so
 * two backends of one shard (pg_backend_pid() % 8) committing the same keys in opposite orders
 * locked them in a cycle (deadlock at COMMIT). Each trigger now first takes a transaction-scoped
 * advisory lock on its shard, one lock for both rollup tables: a transaction holds it before any
 * rollup row of its shard, and only holders write those rows, so waits cannot form a cycle.
 * Same-shard commits were already serialized by the rows they share; this only fixes the order.
 */
const SHARD_LOCK = `PERFORM pg_advisory_xact_lock(hashtext('svc.day_counts'), pg_backend_pid() % 8);`;

export async function up(db: Knex): Promise<void> {
  for (const fn of ['svc_job_day_counts', 'svc_pipeline_run_day_counts']) {
    const { rows } = await db.raw('SELECT prosrc FROM pg_proc WHERE proname = ?', [fn]);
    const body: string = rows[0].prosrc;
    if (body.includes('pg_advisory_xact_lock')) continue;
    const locked = body.replace(/BEGIN\s/, `BEGIN\n      ${SHARD_LOCK}\n`);
    await db.raw(`CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $fn$${locked}$fn$`);
  }
}
