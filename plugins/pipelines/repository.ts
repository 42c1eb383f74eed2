import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { afterCommit } from '../../core/db/after-commit.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';
import type { JobPhase } from '../../core/ports/jobs.ts';
import { RunEventBus } from './bus.ts';
import type { RunStatus, StepStatus } from './status.ts';
import type { NewRunEvent, StepChange } from './settle.ts';

export type ExecutionType = 'action' | 'script' | 'agent';

export interface RunRow {
  id: string;
  project_id: string;
  pipeline_name: string;
  status: RunStatus;
  ref: string | null;
  git_sha: string | null;
  env_name: string | null;
  inputs: Record<string, unknown>;
  only_steps: string[] | null;
  manifest_hash: string;
  error_message: string | null;
  cancel_reason: string | null;
  created_by: string | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  updated_at: Date;
}

export interface StepRow {
  run_id: string;
  name: string;
  position: number;
  job_id: string;
  execution_type: ExecutionType;
  depends_on: string[];
  approval: boolean;
  status: StepStatus;
  approved_by: string | null;
  approved_at: Date | null;
  started_at: Date | null;
  completed_at: Date | null;
}

/** A step with its job's phase and close reason, read under the run's lock. */
export type StepWithJob = StepRow & { job_phase: JobPhase; job_close_reason: string | null };

export type RunEventType = 'run.status' | 'step.status' | 'step.log';

export interface RunEventRow {
  id: string;
  run_id: string;
  step_name: string | null;
  type: RunEventType;
  data: Record<string, unknown>;
  created_at: Date;
}

export type Run = RunRow & { steps: Omit<StepRow, 'run_id' | 'position'>[] };

export interface RunFilters extends ListQuery {
  status?: RunStatus;
}

export function toRun(run: RunRow, steps: StepRow[]): Run {
  return { ...run, steps: steps.map(({ run_id: _r, position: _p, ...step }) => step) };
}

@injectable()
export class PipelineRunRepository {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(RunEventBus) private readonly bus: RunEventBus,
  ) {}

  async insert(
    run: Omit<RunRow, 'status' | 'created_at' | 'started_at' | 'completed_at' | 'updated_at' | 'error_message' | 'cancel_reason'>,
    steps: Omit<StepRow, 'status' | 'approved_by' | 'approved_at' | 'started_at' | 'completed_at'>[],
    trx: Db,
  ): Promise<void> {
    await trx('pipeline_runs').insert({ ...run, inputs: JSON.stringify(run.inputs) });
    await trx('pipeline_run_steps').insert(steps);
  }

  byId(id: string, db: Db = this.db): Promise<RunRow | undefined> {
    return db('pipeline_runs').where({ id }).first();
  }

  /** Locks the runs, in id order (the order every writer takes them in). */
  lock(ids: string[], trx: Db): Promise<RunRow[]> {
    return trx('pipeline_runs').whereIn('id', ids).orderBy('id').forUpdate();
  }

  steps(runId: string, db: Db = this.db): Promise<StepRow[]> {
    return db('pipeline_run_steps').where({ run_id: runId }).orderBy('position');
  }

  stepsOfRuns(runIds: string[], trx: Db): Promise<StepRow[]> {
    return trx('pipeline_run_steps').whereIn('run_id', runIds).orderBy(['run_id', 'position']);
  }

  async withSteps(run: RunRow, db: Db = this.db): Promise<Run> {
    return toRun(run, await this.steps(run.id, db));
  }

  async list(projectId: string, pipelineName: string, f: RunFilters) {
    const q = this.db('pipeline_runs').where({ project_id: projectId, pipeline_name: pipelineName });
    if (f.status) q.where('status', f.status);
    const page = await paginate<RunRow, RunRow>(q, f, (r) => r, 'pipeline_runs');
    const steps = await this.db('pipeline_run_steps')
      .whereIn(
        'run_id',
        page.data.map((r) => r.id),
      )
      .orderBy('position');
    return {
      ...page,
      data: page.data.map((run) =>
        toRun(
          run,
          steps.filter((s: StepRow) => s.run_id === run.id),
        ),
      ),
    };
  }

  async updateRun(id: string, changes: Partial<RunRow>, trx: Db): Promise<RunRow> {
    const [row] = await trx('pipeline_runs')
      .where({ id })
      .update({ ...changes, updated_at: trx.fn.now() })
      .returning('*');
    return row;
  }

  async updateStep(runId: string, name: string, changes: Partial<StepRow>, trx: Db): Promise<void> {
    await trx('pipeline_run_steps').where({ run_id: runId, name }).update(changes);
  }

  /** Status (and start or end time) of many steps in one statement. */
  async updateSteps(changes: StepChange[], trx: Db): Promise<void> {
    if (changes.length === 0) return;
    await trx.raw(
      `UPDATE pipeline_run_steps s
       SET status = c.status, started_at = coalesce(c.started_at, s.started_at), completed_at = coalesce(c.completed_at, s.completed_at)
       FROM jsonb_to_recordset(?::jsonb) AS c(run_id text, name text, status text, started_at timestamptz, completed_at timestamptz)
       WHERE s.run_id = c.run_id AND s.name = c.name`,
      [JSON.stringify(changes)],
    );
  }

  /** Appends to the runs' event logs in one statement, in order; streams hear of it once the transaction commits. */
  async appendEvents(trx: Db, events: NewRunEvent[]): Promise<void> {
    if (events.length === 0) return;
    await trx('pipeline_run_events').insert(events.map((e) => ({ ...e, data: JSON.stringify(e.data) })));
    const runIds = new Set(events.map((e) => e.run_id));
    afterCommit(trx, () => {
      for (const id of runIds) this.bus.publish(id);
    });
  }

  /** The run's events after `afterId`, oldest first; only one step's when `stepName` is given. */
  eventsAfter(runId: string, afterId: number, stepName: string | null): Promise<RunEventRow[]> {
    const q = this.db('pipeline_run_events').where({ run_id: runId }).andWhere('id', '>', afterId).orderBy('id').limit(500);
    if (stepName !== null) q.where({ step_name: stepName });
    return q;
  }
}
