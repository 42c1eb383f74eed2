import type { Knex } from 'knex';

/**
 * Build runs move onto the work engine (core/work, queue `builds`): the engine's lease replaces
 * `heartbeat_at`. Runs still pending or building when this lands get their work item: a pending one
 * queued, a building one with a lease that has already run out, so the next runner builds it again.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw(`INSERT INTO work_items (queue, key, payload, status, attempts, max_attempts, lease_token, lease_owner, lease_expires_at)
    SELECT 'builds', id, '{}', CASE WHEN status = 'pending' THEN 'queued' ELSE 'running' END, CASE WHEN status = 'pending' THEN 0 ELSE 1 END, 3,
      CASE WHEN status = 'pending' THEN NULL ELSE gen_random_uuid() END, runner_ref,
      CASE WHEN status = 'pending' THEN NULL ELSE now() - interval '1 second' END
    FROM build_runs WHERE status IN ('pending', 'building')`);
  await db.schema.alterTable('build_runs', (t) => t.dropColumn('heartbeat_at'));
}
