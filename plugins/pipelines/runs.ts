import Boom from '@hapi/boom';
import type { DependencyContainer } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import type { Principal } from '../../core/auth/principal.ts';
import type { Creator } from '../../core/ports/launchers.ts';
import { emitEvent } from '../../core/events/emit.ts';
import { ManifestReaderToken, type ManifestReader } from '../../core/ports/manifest.ts';
import { JobGraphsToken, type GraphJob, type JobGraphs, type JobPhaseChange } from '../../core/ports/jobs.ts';
import { describeStep, stepExecution, stepKind, type PipelineDefinition, type PipelineStep, type StoredManifest } from '../../core/manifest/types.ts';
import { PipelineRunRepository, type Run, type RunRow, type StepWithJob } from './repository.ts';
import { dependentsOf, isTerminal, runStatusFor, stepStatusFor, type StepStatus } from './status.ts';

export interface RunRequest {
  ref?: string;
  env?: string;
  inputs?: Record<string, unknown>;
  only_steps?: string[];
}

const GIT_SHA = /^[0-9a-f]{40}$/;
export const STEP_FAILED = 'STEP_FAILED';

/**
 * Pipeline runs: `start` lays a run out as one job per step; `follow` (a job phase listener)
 * moves steps and the run as their jobs change, in the same transaction; `approve` and `cancel`
 * act on a run under its row lock. Every change is appended to the run's event log for streams.
 */
export class PipelineRuns {
  private readonly db: Db;
  private readonly runs: PipelineRunRepository;
  private readonly graphs: JobGraphs;

  constructor(private readonly container: DependencyContainer) {
    this.db = container.resolve(Tokens.Db);
    this.runs = container.resolve(PipelineRunRepository);
    this.graphs = container.resolve(JobGraphsToken);
  }

  private async manifest(projectId: string): Promise<StoredManifest> {
    const manifest = await this.container.resolve<ManifestReader>(ManifestReaderToken).current(projectId);
    if (!manifest) throw Boom.notFound(`project ${projectId} has no synced manifest`);
    return manifest;
  }

  async definition(projectId: string, name: string): Promise<{ manifest: StoredManifest; pipeline: PipelineDefinition }> {
    const manifest = await this.manifest(projectId);
    const pipelines = manifest.parsed.pipelines ?? {};
    if (!Object.hasOwn(pipelines, name)) throw Boom.notFound(`pipeline ${name} not found in the project's manifest`);
    return { manifest, pipeline: pipelines[name] };
  }

  async start(creator: Creator, projectId: string, name: string, request: RunRequest): Promise<Run> {
    const { manifest, pipeline } = await this.definition(projectId, name);
    const inputs = { ...this.environmentInputs(manifest, name, request.env), ...(request.inputs ?? {}) };
    const steps = selectSteps(pipeline.steps, request.only_steps);
    const id = newId('prun');
    const graph: GraphJob[] = steps.map((step) => ({ key: step.name, depends_on: step.depends_on, request: stepRequest(id, name, step, request, inputs) }));
    return this.db.transaction(async (trx) => {
      const jobIds = await this.graphs.create(creator, projectId, graph, trx);
      await this.runs.insert(
        {
          id, project_id: projectId, pipeline_name: name, ref: request.ref ?? null, git_sha: request.ref && GIT_SHA.test(request.ref) ? request.ref : null,
          env_name: request.env ?? null, inputs, only_steps: request.only_steps ?? null, manifest_hash: manifest.manifest_hash, created_by: creator.id,
        },
        steps.map((step, position) => ({
          run_id: id, name: step.name, position, job_id: jobIds.get(step.name)!, execution_type: stepKind(step), depends_on: step.depends_on, approval: step.approval === true,
        })),
        trx,
      );
      await this.runs.append(trx, id, null, 'run.status', { run_id: id, status: 'pending', error_message: null, at: new Date() });
      return this.runs.withSteps(await this.settle(id, trx), trx);
    });
  }

  /** The environment's `pipeline_inputs` when it runs this pipeline; 422 for an environment the manifest lacks. */
  private environmentInputs(manifest: StoredManifest, pipeline: string, env: string | undefined): Record<string, unknown> {
    if (env === undefined) return {};
    const environments = manifest.parsed.environments ?? {};
    if (!Object.hasOwn(environments, env)) throw Boom.badData(`environment '${env}' is not defined in the project's manifest`);
    const def = environments[env];
    return def.pipeline === pipeline ? (def.pipeline_inputs ?? {}) : {};
  }

  /** The job phase listener: steps of pipeline runs follow their jobs. */
  readonly follow = async (jobs: JobPhaseChange[], trx: Db): Promise<void> => {
    const runIds = [...new Set(jobs.map((j) => j.hints.pipeline_run_id).filter((id): id is string => typeof id === 'string'))].sort();
    for (const runId of runIds) await this.settle(runId, trx);
  };

  /**
   * Brings a run's steps in line with their jobs, then the run with its steps, under the run's
   * lock: a step newly failed cancels the steps that wait for it (and any approval not given
   * yet, which can no longer be given); a step whose dependencies all succeeded waits for
   * approval when it asks for one. Every change is logged for the streams.
   */
  private async settle(runId: string, trx: Db): Promise<RunRow> {
    const run = (await this.runs.lock(runId, trx))!;
    const steps = await this.runs.stepsWithJobs(runId, trx);
    const now = new Date();
    const move = async (step: StepWithJob, status: StepStatus) => {
      if (step.status === status) return;
      const changes: Partial<StepWithJob> = { status };
      if (status === 'running' && !step.started_at) changes.started_at = now;
      if (isTerminal(status)) changes.completed_at = now;
      await this.runs.updateStep(runId, step.name, changes, trx);
      Object.assign(step, changes);
      await this.runs.append(trx, runId, step.name, 'step.status', { run_id: runId, step_name: step.name, job_id: step.job_id, status, at: now });
    };

    const failed: StepWithJob[] = [];
    for (const step of steps) {
      if (isTerminal(step.status)) continue;
      const status = stepStatusFor(step.job_phase);
      if (status === 'pending' && step.status === 'awaiting_approval') continue;
      if (status === 'failed') failed.push(step);
      await move(step, status);
    }
    let doomed: StepWithJob[] = [];
    if (failed.length > 0 && !isTerminal(run.status)) {
      const waiting = dependentsOf(steps, failed.map((s) => s.name));
      doomed = steps.filter((s) => !isTerminal(s.status) && (waiting.has(s.name) || (s.approval && !s.approved_at)));
      for (const step of doomed) await move(step, 'cancelled');
    }
    const succeeded = new Set(steps.filter((s) => s.status === 'succeeded').map((s) => s.name));
    for (const step of steps) {
      if (step.approval && !step.approved_at && step.status === 'pending' && step.depends_on.every((d) => succeeded.has(d))) await move(step, 'awaiting_approval');
    }
    const settled = isTerminal(run.status) ? run : await this.moveRun(run, runStatusFor(steps, run.started_at !== null), steps, trx);
    // Last: the settles these cancels cause (through the listener) then find nothing left to change.
    await this.graphs.cancel(doomed.map((s) => s.job_id), `pipeline run ${runId}: step ${failed[0]?.name} failed`, trx);
    return settled;
  }

  private async moveRun(run: RunRow, status: RunRow['status'], steps: StepWithJob[], trx: Db, cancelReason?: string | null): Promise<RunRow> {
    if (run.status === status) return run;
    const now = new Date();
    const failedStep = status === 'failed' ? steps.find((s) => s.status === 'failed') : undefined;
    const changes: Partial<RunRow> = { status };
    if (!run.started_at && (status === 'running' || status === 'succeeded' || status === 'failed')) changes.started_at = now;
    if (isTerminal(status)) changes.completed_at = now;
    if (failedStep) changes.error_message = `step ${failedStep.name} failed: ${failedStep.job_close_reason ?? 'its job was cancelled'}`;
    if (cancelReason !== undefined) changes.cancel_reason = cancelReason;
    const updated = await this.runs.updateRun(run.id, changes, trx);
    await this.runs.append(trx, run.id, null, 'run.status', { run_id: run.id, status, error_message: updated.error_message, at: now });
    if (failedStep) {
      await emitEvent(trx, {
        project_id: run.project_id, type: 'system.pipeline.failed', source: 'system', env_name: run.env_name, ref_sha: run.git_sha, actor_type: 'system',
        payload: {
          run_id: run.id, pipeline_name: run.pipeline_name, error_message: updated.error_message, error_code: STEP_FAILED, exit_code: null,
          mutation_id: null, request_id: null, metadata: { step_name: failedStep.name, job_id: failedStep.job_id, project_id: run.project_id },
        },
      });
    }
    return updated;
  }

  async approve(principal: Principal, runId: string): Promise<Run> {
    return this.db.transaction(async (trx) => {
      const run = (await this.runs.lock(runId, trx))!;
      if (run.status !== 'awaiting_approval') throw Boom.conflict(`pipeline run ${runId} is ${run.status}: only a run awaiting approval can be approved`);
      const waiting = (await this.runs.stepsWithJobs(runId, trx)).filter((s) => s.status === 'awaiting_approval');
      const now = new Date();
      for (const step of waiting) {
        await this.runs.updateStep(runId, step.name, { status: 'pending', approved_by: principal.id, approved_at: now }, trx);
        await this.runs.append(trx, runId, step.name, 'step.status', { run_id: runId, step_name: step.name, job_id: step.job_id, status: 'pending', approved_by: principal.id, at: now });
      }
      await this.graphs.release(waiting.map((s) => s.job_id), trx);
      return this.runs.withSteps(await this.settle(runId, trx), trx);
    });
  }

  async cancel(runId: string, reason: string | undefined): Promise<Run> {
    return this.db.transaction(async (trx) => {
      // Jobs before the run, the order a claim takes them in (job, then its run's settle).
      await this.runs.lockJobs(runId, trx);
      const run = (await this.runs.lock(runId, trx))!;
      if (isTerminal(run.status)) throw Boom.conflict(`pipeline run ${runId} already ended: ${run.status}`);
      const steps = await this.runs.stepsWithJobs(runId, trx);
      const open = steps.filter((s) => !isTerminal(s.status));
      const now = new Date();
      for (const step of open) {
        await this.runs.updateStep(runId, step.name, { status: 'cancelled', completed_at: now }, trx);
        step.status = 'cancelled';
        await this.runs.append(trx, runId, step.name, 'step.status', { run_id: runId, step_name: step.name, job_id: step.job_id, status: 'cancelled', at: now });
      }
      const cancelled = await this.moveRun(run, 'cancelled', steps, trx, reason ?? null);
      const why = reason ? `pipeline run ${runId} cancelled: ${reason}` : `pipeline run ${runId} cancelled`;
      await this.graphs.cancel(open.map((s) => s.job_id), why, trx);
      return this.runs.withSteps(cancelled, trx);
    });
  }
}

/** The steps to run: all, or the named subset (422 naming unknown steps); dependencies outside the subset count as met. */
function selectSteps(steps: PipelineStep[], only: string[] | undefined): PipelineStep[] {
  if (only === undefined) return steps;
  const known = new Set(steps.map((s) => s.name));
  const unknown = only.filter((n) => !known.has(n));
  if (unknown.length > 0) throw Boom.badData(`only_steps names steps the pipeline does not have: ${unknown.join(', ')}`);
  const chosen = new Set(only);
  return steps.filter((s) => chosen.has(s.name)).map((s) => ({ ...s, depends_on: s.depends_on.filter((d) => chosen.has(d)) }));
}

/** The create request of one step's job: held in backlog when it waits for approval. */
function stepRequest(runId: string, pipeline: string, step: PipelineStep, request: RunRequest, inputs: Record<string, unknown>): GraphJob['request'] {
  const hints: Record<string, unknown> = {
    pipeline_run_id: runId,
    pipeline_name: pipeline,
    step_name: step.name,
    execution_type: stepKind(step),
    step: stepExecution(step),
    request_json: JSON.stringify(inputs),
  };
  if ('script' in step && step.script.timeout) hints.timeout_seconds = step.script.timeout;
  return {
    title: `${pipeline}: ${step.name}`,
    description: `Step ${step.name} of pipeline ${pipeline}, run ${runId} (${describeStep(step)})`,
    labels: [`pipeline:${pipeline}`, `step:${step.name}`],
    hints,
    ...(step.approval ? { phase: 'backlog' } : {}),
    ...(request.ref ? { git: { ref: request.ref } } : {}),
    ...(request.env ? { env_name: request.env } : {}),
  };
}
