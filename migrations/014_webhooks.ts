import type { Knex } from 'knex';

/**
 * Outbound webhooks: subscriptions (secret sealed), their deliveries, replays, and an outbox the
 * events table fills by trigger. The outbox makes fan-out independent of the trigger router's
 * status column and of its row locks: orchestrators claim outbox rows with SKIP LOCKED.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('webhook_subscriptions', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('project_id').references('projects.id').onDelete('CASCADE');
    t.text('url').notNullable();
    t.specificType('events', 'text[]').notNullable();
    t.jsonb('filter').notNullable().defaultTo('{}');
    t.text('secret_enc').notNullable();
    t.boolean('enabled').notNullable().defaultTo(true);
    t.integer('consecutive_failures').notNullable().defaultTo(0);
    t.timestamp('disabled_at', { useTz: true });
    t.text('disabled_reason');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('deleted_at', { useTz: true });
    t.index(['org_id', 'created_at']);
  });
  await db.raw('CREATE INDEX webhook_subscriptions_live ON webhook_subscriptions (org_id) WHERE enabled AND deleted_at IS NULL');

  await db.schema.createTable('webhook_replays', (t) => {
    t.text('id').primary();
    t.text('subscription_id').notNullable().references('webhook_subscriptions.id').onDelete('CASCADE');
    t.text('from_event').notNullable();
    t.timestamp('to_time', { useTz: true }).notNullable();
    t.integer('max_events').notNullable();
    t.boolean('dry_run').notNullable();
    t.text('status').notNullable();
    t.integer('events_matched').notNullable();
    t.integer('events_enqueued').notNullable();
    t.integer('events_skipped').notNullable();
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.index(['subscription_id', 'status']);
  });
  await db.raw(`ALTER TABLE webhook_replays ADD CONSTRAINT webhook_replays_status_check CHECK (status IN ('running', 'completed'))`);

  await db.schema.createTable('webhook_deliveries', (t) => {
    t.text('id').primary();
    t.text('subscription_id').notNullable().references('webhook_subscriptions.id').onDelete('CASCADE');
    // No foreign key: a test delivery's event is never stored.
    t.text('event_id').notNullable();
    t.text('event_type').notNullable();
    t.text('kind').notNullable();
    t.text('replay_id').references('webhook_replays.id').onDelete('SET NULL');
    t.text('status').notNullable().defaultTo('pending');
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('lease_expires_at', { useTz: true });
    t.timestamp('next_attempt_at', { useTz: true });
    t.timestamp('last_attempt_at', { useTz: true });
    t.integer('response_status');
    t.text('response_body');
    t.text('error');
    t.integer('duration_ms');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.index(['subscription_id', 'created_at']);
    t.index(['subscription_id', 'event_id']);
  });
  await db.raw(`ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_kind_check CHECK (kind IN ('event', 'replay', 'test'))`);
  await db.raw(
    `ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed'))`,
  );
  // One delivery of an event per subscription in flight at a time: replays and fan-out dedupe on it.
  await db.raw(`CREATE UNIQUE INDEX webhook_deliveries_active ON webhook_deliveries (subscription_id, event_id) WHERE status IN ('pending', 'retrying')`);
  await db.raw(`CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (created_at) WHERE status = 'pending'`);
  await db.raw(`CREATE INDEX webhook_deliveries_retrying ON webhook_deliveries (next_attempt_at) WHERE status = 'retrying'`);
  await db.raw('CREATE INDEX webhook_deliveries_replay ON webhook_deliveries (replay_id) WHERE replay_id IS NOT NULL');

  await db.schema.createTable('webhook_outbox', (t) => {
    t.bigIncrements('id').primary();
    t.text('event_id').notNullable().references('events.id').onDelete('CASCADE');
  });
  // Only events of an org with a live subscription enter the outbox; a subscription created later
  // sees events from then on (replays reach back further).
  await db.raw(`
    CREATE FUNCTION webhook_outbox_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (
        SELECT 1 FROM webhook_subscriptions s JOIN projects p ON p.org_id = s.org_id
        WHERE p.id = NEW.project_id AND s.enabled AND s.deleted_at IS NULL
      ) THEN
        INSERT INTO webhook_outbox (event_id) VALUES (NEW.id);
      END IF;
      RETURN NULL;
    END $$`);
  await db.raw('CREATE TRIGGER events_webhook_outbox AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION webhook_outbox_enqueue()');
}
