import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';

export const LANE_STATUSES = ['ready', 'running', 'ended'] as const;
export type LaneStatus = (typeof LANE_STATUSES)[number];

/** What one rival runs: the job's harness fields for this lane. */
export interface Variant {
  harness?: string;
  harness_profile?: string;
  model?: string;
  reasoning_effort?: string;
}

export interface LaneRow {
  job_id: string;
  lane: number;
  variant: Variant;
  check_command: string | null;
  status: LaneStatus;
  worker_losses: number;
  created_at: Date;
}

/** A ready lane a claimer took, with what it needs to open the lane's attempt. */
export interface PickedLane {
  job_id: string;
  lane: number;
  project_id: string;
}

/** The job_race_lanes table (SQL only; the rules are in Races and JobLifecycle). */
@injectable()
export class RaceLaneRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  async add(jobId: string, variants: Variant[], checkCommand: string | null, trx: Db): Promise<LaneRow[]> {
    const { rows } = await trx.raw(
      `INSERT INTO job_race_lanes (job_id, lane, variant, check_command)
       SELECT ?, coalesce((SELECT max(lane) FROM job_race_lanes WHERE job_id = ?), 0) + v.ord, v.variant, ?
       FROM jsonb_array_elements(?::jsonb) WITH ORDINALITY AS v(variant, ord)
       RETURNING *`,
      [jobId, jobId, checkCommand, JSON.stringify(variants)],
    );
    return rows;
  }

  of(jobId: string, db: Db = this.db): Promise<LaneRow[]> {
    return db('job_race_lanes').where({ job_id: jobId }).orderBy('lane');
  }

  lane(jobId: string, lane: number, db: Db = this.db): Promise<LaneRow | undefined> {
    return db('job_race_lanes').where({ job_id: jobId, lane }).first();
  }

  /**
   * Up to `limit` ready lanes of active jobs, oldest first, row-locked (SKIP LOCKED: claimers never
   * wait for each other), leaving out the projects in `skipProjects`.
   */
  async pick(limit: number, skipProjects: string[], trx: Db): Promise<PickedLane[]> {
    const { rows } = await trx.raw(
      `SELECT l.job_id, l.lane, j.project_id FROM job_race_lanes l JOIN jobs j ON j.id = l.job_id
       WHERE l.status = 'ready' AND j.phase = 'active' AND j.project_id <> ALL(?::text[])
       ORDER BY l.created_at, l.job_id, l.lane
       LIMIT ? FOR UPDATE OF l SKIP LOCKED`,
      [skipProjects, limit],
    );
    return rows;
  }

  async set(jobId: string, lane: number, status: LaneStatus, trx: Db): Promise<void> {
    await trx('job_race_lanes').where({ job_id: jobId, lane }).update({ status });
  }

  /** Back to ready after its attempt was lost with its worker; returns how many times that happened. */
  async lost(jobId: string, lane: number, trx: Db): Promise<number> {
    const [row] = await trx('job_race_lanes')
      .where({ job_id: jobId, lane })
      .update({ status: 'ready', worker_losses: trx.raw('worker_losses + 1') })
      .returning('worker_losses');
    return row.worker_losses;
  }

  /** Whether the job was raced and none of its attempts has been chosen yet. */
  async undecided(jobId: string, trx: Db): Promise<boolean> {
    const { rows } = await trx.raw(
      `SELECT EXISTS (SELECT 1 FROM job_race_lanes WHERE job_id = ?)
          AND NOT EXISTS (SELECT 1 FROM job_attempts WHERE job_id = ? AND chosen) AS undecided`,
      [jobId, jobId],
    );
    return rows[0].undecided;
  }

  async endAll(jobId: string, trx: Db): Promise<void> {
    await trx('job_race_lanes').where({ job_id: jobId }).whereNot({ status: 'ended' }).update({ status: 'ended' });
  }
}
