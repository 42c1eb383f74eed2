import type { Knex } from 'knex';

/**
 * Event routing moves onto the work engine (core/work, queue `events`): each event is queued for
 * routing with a work item in the transaction that stores it, and the engine's lease replaces the
 * router's own claim (`events.status = 'processing'`, `claimed_at`, `attempts`). Events still to
 * route when this lands get their item, queued now; one an old router was routing (processing) goes
 * back to pending with its claims so far counted, so a match it had started may start once more.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw(`INSERT INTO work_items (queue, key, payload, status, attempts, max_attempts)
    SELECT 'events', id, '{}', 'queued', LEAST(attempts, 2), 3 FROM events WHERE status IN ('pending', 'processing')
    ON CONFLICT (queue, key) DO NOTHING`);
  await db('events').where({ status: 'processing' }).update({ status: 'pending' });
  await db.raw('DROP INDEX IF EXISTS events_processing');
  await db.schema.alterTable('events', (t) => {
    t.dropColumn('claimed_at');
    t.dropColumn('attempts');
  });
}
