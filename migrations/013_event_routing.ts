import type { Knex } from 'knex';

/**
 * What the event router needs on the spine (the caller's mutation and request ids, the claim,
 * the routing outcome), project schedules, and the cron schedules the orchestrators registered
 * with the scheduler (so a re-sync knows what to remove).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('events', (t) => {
    t.text('mutation_id');
    t.text('request_id');
    t.jsonb('routing');
    t.text('error');
    t.timestamp('claimed_at', { useTz: true });
    t.integer('attempts').notNullable().defaultTo(0);
    t.index(['project_id', 'type', 'created_at']);
  });
  await db.raw(`CREATE INDEX events_processing ON events (claimed_at) WHERE status = 'processing'`);

  await db.schema.createTable('schedules', (t) => {
    t.text('id').primary();
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('name');
    t.text('cron').notNullable();
    t.text('event_type').notNullable();
    t.jsonb('payload').notNullable().defaultTo('{}');
    t.boolean('enabled').notNullable().defaultTo(true);
    t.text('created_by');
    t.timestamp('last_fired_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['project_id', 'created_at']);
  });

  await db.schema.createTable('schedule_registrations', (t) => {
    t.text('key').primary();
    t.text('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('expression').notNullable();
    t.timestamp('registered_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['project_id']);
  });
}
