import type { Knex } from 'knex';

/**
 * What a receipt is assembled from, and the receipts themselves.
 * - attempt_phases: how long each lifecycle phase of an attempt took (provision, clone, execute, …).
 * - attempt_usage: one row per `llm.call`: usage only (model, token counts, timing), never prompt or response text.
 * - attempt_receipts: one immutable receipt per ended attempt.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('attempt_phases', (t) => {
    t.uuid('attempt_id').notNullable().references('job_attempts.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable();
    t.timestamp('ended_at', { useTz: true }).notNullable();
    t.primary(['attempt_id', 'name']);
  });
  await db.raw('ALTER TABLE attempt_phases ADD CONSTRAINT attempt_phases_order CHECK (ended_at >= started_at)');

  await db.schema.createTable('attempt_usage', (t) => {
    t.bigIncrements('id');
    t.uuid('attempt_id').notNullable().references('job_attempts.id').onDelete('CASCADE');
    t.text('model').notNullable();
    t.text('provider');
    for (const c of ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'reasoning_tokens']) {
      t.integer(c).notNullable().defaultTo(0);
    }
    t.integer('duration_ms');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['attempt_id']);
  });
  await db.raw(`ALTER TABLE attempt_usage ADD CONSTRAINT attempt_usage_counts CHECK (
    input_tokens >= 0 AND output_tokens >= 0 AND cache_read_tokens >= 0 AND cache_write_tokens >= 0 AND reasoning_tokens >= 0
    AND (duration_ms IS NULL OR duration_ms >= 0))`);

  await db.schema.createTable('attempt_receipts', (t) => {
    t.uuid('attempt_id').primary().references('job_attempts.id').onDelete('CASCADE');
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.jsonb('receipt').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['job_id']);
  });

  // Immutable: no UPDATE ever; a DELETE only as part of removing its attempt or job (the cascade of a
  // hard delete, which the API never does), so a receipt cannot vanish while its attempt exists.
  await db.raw(`
    CREATE FUNCTION svc_attempt_receipts_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE'
         AND (NOT EXISTS (SELECT 1 FROM job_attempts WHERE id = OLD.attempt_id) OR NOT EXISTS (SELECT 1 FROM jobs WHERE id = OLD.job_id)) THEN
        RETURN OLD;
      END IF;
      RAISE EXCEPTION 'attempt receipts are immutable: % of the receipt of attempt % is not allowed', TG_OP, OLD.attempt_id
        USING ERRCODE = 'integrity_constraint_violation';
    END $$`);
  await db.raw(
    `CREATE TRIGGER attempt_receipts_immutable BEFORE UPDATE OR DELETE ON attempt_receipts FOR EACH ROW EXECUTE FUNCTION svc_attempt_receipts_immutable()`,
  );
}
