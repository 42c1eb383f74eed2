import type { Knex } from 'knex';

/**
 * Rival attempts (docs/worker.md): a job raced by several variants gets one lane per variant. A lane
 * is claimed like a ready job (its own attempt, lease and reaper), at most one running attempt each;
 * the attempt row names its lane, the outcome of the race's check command, and whether it was chosen.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw(`CREATE TABLE job_race_lanes (
    job_id text NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    lane integer NOT NULL CHECK (lane >= 1),
    variant jsonb NOT NULL,
    check_command text,
    status text NOT NULL DEFAULT 'ready' CHECK (status IN ('ready', 'running', 'ended')),
    worker_losses integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, lane))`);
  await db.raw(`CREATE INDEX job_race_lanes_ready ON job_race_lanes (created_at, job_id, lane) WHERE status = 'ready'`);
  await db.raw('ALTER TABLE job_attempts ADD COLUMN race_lane integer, ADD COLUMN check_result jsonb, ADD COLUMN chosen boolean NOT NULL DEFAULT false');
  await db.raw(`CREATE UNIQUE INDEX job_attempts_one_running_per_lane ON job_attempts (job_id, race_lane) WHERE status = 'running' AND race_lane IS NOT NULL`);
}
