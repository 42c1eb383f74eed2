import type { Knex } from 'knex';

/**
 * Daily rollups analytics reads, so a window's figures sum at most one row per project, day and
 * shard instead of counting every job and run of the window:
 * - job_day_counts (jobs domain): per project and UTC day, jobs created that day and jobs closed
 *   that day done or failed (an attempt failed: lifecycle's `attempt N failed (…)` close reason).
 * - pipeline_run_day_counts (pipelines domain): per project, pipeline and UTC day of creation, the
 *   runs, how many succeeded, failed and finished, and the summed duration of the finished ones.
 * Triggers on the owning table keep each exact in the writing transaction: every insert, delete
 * and change that moves a row's contribution adds the difference. They are deferred to commit, so
 * the rollup row is locked only while the transaction commits, after every lock the transaction
 * takes on jobs or runs (no lock-order cycle with them). A backend adds to its own shard
 * (pg_backend_pid() % 8): concurrent writers of one project and day rarely wait on each other.
 * Readers sum the shards. Existing rows are counted here into shard 0.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('job_day_counts', (t) => {
    t.text('project_id').notNullable();
    t.date('day').notNullable();
    t.smallint('shard').notNullable();
    t.bigint('created').notNullable().defaultTo(0);
    t.bigint('completed').notNullable().defaultTo(0);
    t.bigint('failed').notNullable().defaultTo(0);
    t.primary(['project_id', 'day', 'shard']);
  });
  await db.raw(`
    CREATE FUNCTION svc_job_day_rows(j jobs, sign int) RETURNS TABLE (project_id text, day date, created int, completed int, failed int)
    LANGUAGE sql STABLE AS $$
      SELECT j.project_id, (j.created_at AT TIME ZONE 'UTC')::date, sign, 0, 0 WHERE j.id IS NOT NULL
      UNION ALL
      SELECT j.project_id, (j.closed_at AT TIME ZONE 'UTC')::date, 0, sign, 0 WHERE j.phase = 'done' AND j.closed_at IS NOT NULL
      UNION ALL
      SELECT j.project_id, (j.closed_at AT TIME ZONE 'UTC')::date, 0, 0, sign
      WHERE j.phase = 'cancelled' AND j.close_reason LIKE 'attempt % failed%' AND j.closed_at IS NOT NULL
    $$`);
  await db.raw(`
    CREATE FUNCTION svc_job_day_counts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO job_day_counts AS c (project_id, day, shard, created, completed, failed)
      SELECT r.project_id, r.day, pg_backend_pid() % 8, sum(r.created), sum(r.completed), sum(r.failed)
      FROM (SELECT * FROM svc_job_day_rows(OLD, -1) UNION ALL SELECT * FROM svc_job_day_rows(NEW, 1)) r
      GROUP BY r.project_id, r.day
      HAVING sum(r.created) <> 0 OR sum(r.completed) <> 0 OR sum(r.failed) <> 0
      ON CONFLICT (project_id, day, shard) DO UPDATE
        SET created = c.created + EXCLUDED.created, completed = c.completed + EXCLUDED.completed, failed = c.failed + EXCLUDED.failed;
      RETURN NULL;
    END $$`);
  await db.raw(`CREATE CONSTRAINT TRIGGER jobs_day_counts_insert_delete AFTER INSERT OR DELETE ON jobs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION svc_job_day_counts()`);
  // Only changes that can move a contribution: a job closing, reopening or changing how it closed.
  await db.raw(`CREATE CONSTRAINT TRIGGER jobs_day_counts_update AFTER UPDATE OF phase, closed_at, close_reason, created_at, project_id ON jobs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.project_id IS DISTINCT FROM NEW.project_id
      OR ((OLD.phase IN ('done', 'cancelled') OR NEW.phase IN ('done', 'cancelled'))
        AND (OLD.phase IS DISTINCT FROM NEW.phase OR OLD.closed_at IS DISTINCT FROM NEW.closed_at OR OLD.close_reason IS DISTINCT FROM NEW.close_reason)))
    EXECUTE FUNCTION svc_job_day_counts()`);
  await db.raw(`INSERT INTO job_day_counts (project_id, day, shard, created, completed, failed)
    SELECT r.project_id, r.day, 0, sum(r.created), sum(r.completed), sum(r.failed) FROM jobs j, svc_job_day_rows(j, 1) r GROUP BY 1, 2`);

  await db.schema.createTable('pipeline_run_day_counts', (t) => {
    t.text('project_id').notNullable();
    t.text('pipeline_name').notNullable();
    t.date('day').notNullable();
    t.smallint('shard').notNullable();
    t.bigint('runs').notNullable().defaultTo(0);
    t.bigint('succeeded').notNullable().defaultTo(0);
    t.bigint('failed').notNullable().defaultTo(0);
    t.bigint('finished').notNullable().defaultTo(0);
    /** Finished runs with a start and an end, and the sum of their durations. */
    t.bigint('timed').notNullable().defaultTo(0);
    t.specificType('duration_seconds', 'numeric').notNullable().defaultTo(0);
    t.primary(['project_id', 'day', 'pipeline_name', 'shard']);
  });
  await db.raw(`
    CREATE FUNCTION svc_pipeline_run_day_rows(r pipeline_runs, sign int)
    RETURNS TABLE (project_id text, pipeline_name text, day date, runs int, succeeded int, failed int, finished int, timed int, duration_seconds numeric)
    LANGUAGE sql STABLE AS $$
      SELECT r.project_id, r.pipeline_name, (r.created_at AT TIME ZONE 'UTC')::date, sign,
             CASE WHEN r.status = 'succeeded' THEN sign ELSE 0 END, CASE WHEN r.status = 'failed' THEN sign ELSE 0 END,
             CASE WHEN f THEN sign ELSE 0 END, CASE WHEN t THEN sign ELSE 0 END,
             CASE WHEN t THEN sign * extract(epoch FROM r.completed_at - r.started_at) ELSE 0 END
      FROM (SELECT r.status IN ('succeeded', 'failed', 'cancelled') AS f,
                   r.status IN ('succeeded', 'failed', 'cancelled') AND r.started_at IS NOT NULL AND r.completed_at IS NOT NULL AS t) x
      WHERE r.id IS NOT NULL
    $$`);
  await db.raw(`
    CREATE FUNCTION svc_pipeline_run_day_counts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO pipeline_run_day_counts AS c (project_id, pipeline_name, day, shard, runs, succeeded, failed, finished, timed, duration_seconds)
      SELECT r.project_id, r.pipeline_name, r.day, pg_backend_pid() % 8, sum(r.runs), sum(r.succeeded), sum(r.failed), sum(r.finished), sum(r.timed), sum(r.duration_seconds)
      FROM (SELECT * FROM svc_pipeline_run_day_rows(OLD, -1) UNION ALL SELECT * FROM svc_pipeline_run_day_rows(NEW, 1)) r
      GROUP BY r.project_id, r.pipeline_name, r.day
      HAVING sum(r.runs) <> 0 OR sum(r.succeeded) <> 0 OR sum(r.failed) <> 0 OR sum(r.finished) <> 0 OR sum(r.timed) <> 0 OR sum(r.duration_seconds) <> 0
      ON CONFLICT (project_id, day, pipeline_name, shard) DO UPDATE
        SET runs = c.runs + EXCLUDED.runs, succeeded = c.succeeded + EXCLUDED.succeeded, failed = c.failed + EXCLUDED.failed,
            finished = c.finished + EXCLUDED.finished, timed = c.timed + EXCLUDED.timed, duration_seconds = c.duration_seconds + EXCLUDED.duration_seconds;
      RETURN NULL;
    END $$`);
  await db.raw(`CREATE CONSTRAINT TRIGGER pipeline_runs_day_counts_insert_delete AFTER INSERT OR DELETE ON pipeline_runs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION svc_pipeline_run_day_counts()`);
  await db.raw(`CREATE CONSTRAINT TRIGGER pipeline_runs_day_counts_update
    AFTER UPDATE OF status, started_at, completed_at, created_at, project_id, pipeline_name ON pipeline_runs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.started_at IS DISTINCT FROM NEW.started_at OR OLD.completed_at IS DISTINCT FROM NEW.completed_at
      OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.pipeline_name IS DISTINCT FROM NEW.pipeline_name)
    EXECUTE FUNCTION svc_pipeline_run_day_counts()`);
  await db.raw(`INSERT INTO pipeline_run_day_counts (project_id, pipeline_name, day, shard, runs, succeeded, failed, finished, timed, duration_seconds)
    SELECT d.project_id, d.pipeline_name, d.day, 0, sum(d.runs), sum(d.succeeded), sum(d.failed), sum(d.finished), sum(d.timed), sum(d.duration_seconds)
    FROM pipeline_runs r, svc_pipeline_run_day_rows(r, 1) d GROUP BY 1, 2, 3`);
}
