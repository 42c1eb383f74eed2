import type { Knex } from 'knex';

/**
 * Deliveries of events carry their dedupe key, `app_link:<subscription_id>:<source_event_id>`: an
 * event routed to a subscription twice gets one delivery, not one more once the first has ended
 * (the active-only index let that through). Existing event deliveries get the key on their earliest
 * row per pair; later duplicates keep none.
 *
 * Sign-in link requests are counted per e-mail (its SHA-256) and per client address in fixed windows
 * (auth.magic_link_limits): one row per key, its window's start and count.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('webhook_deliveries', (t) => t.text('dedupe_key'));
  await db.raw(`UPDATE webhook_deliveries d SET dedupe_key = 'app_link:' || d.subscription_id || ':' || d.event_id
    FROM (SELECT DISTINCT ON (subscription_id, event_id) id FROM webhook_deliveries WHERE kind = 'event'
          ORDER BY subscription_id, event_id, created_at, id) first
    WHERE d.id = first.id`);
  await db.raw('CREATE UNIQUE INDEX webhook_deliveries_dedupe_key ON webhook_deliveries (dedupe_key) WHERE dedupe_key IS NOT NULL');
  await db.schema.createTable('magic_link_limits', (t) => {
    t.text('key').primary();
    t.timestamp('window_start', { useTz: true }).notNullable();
    t.integer('count').notNullable();
    t.index(['window_start']);
  });
}
