import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import type { Principal } from '../../core/auth/principal.ts';
import type { Creator } from '../../core/ports/launchers.ts';
import { emitEvent } from '../../core/events/emit.ts';
import { ManifestReaderToken, type ManifestReader } from '../../core/ports/manifest.ts';
import { EnvironmentDirectoryLookup, type EnvironmentDirectory } from '../../core/ports/environments.ts';
import type { AppendedLogs } from '../../core/ports/attempts.ts';
import { JobGraphsToken, type GraphJob, type JobGraphs, type JobPhaseChange } from '../../core/ports/jobs.ts';
import {
  describeStep,
  runWorkspace,
  stepExecution,
  stepKind,
  type PipelineDefinition,
  type PipelineStep,
  type StoredManifest,
} from '../../domain/manifest/types.ts';
import { PipelineRunRepository, type Run, type RunRow, type StepWithJob } from './repository.ts';
import { isTerminal } from './status.ts';
import { runInputs, type InputsFrom } from './run-inputs.ts';
import { emptySettlement, moveRun, moveStep, settleRun, type Settlement } from './settle.ts';

export interface RunRequest {
  ref?: string;
  env?: string;
  inputs?: Record<string, unknown>;
  only_steps?: string[];
  /** Only through the PipelineLauncher port (the route's schema refuses it): the environment's own pipeline_inputs, instead of the manifest's. */
  env_inputs?: Record<string, unknown>;
}

const GIT_SHA = /^[0-9a-f]{40}$/;
export const STEP_FAILED = 'STEP_FAILED';

/**
 * Pipeline runs: `start` lays a run out as one job per step; `follow` (a job phase listener)
 * moves steps and the run as their jobs change, in the same transaction; `approve` and `cancel`
 * act on a run under its row lock. Every change is appended to the run's event log for streams.
 */
@injectable()
export class PipelineRuns {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(PipelineRunRepository) private readonly runs: PipelineRunRepository,
    @inject(JobGraphsToken) private readonly graphs: JobGraphs,
    @inject(ManifestReaderToken) private readonly manifests: ManifestReader,
    @inject(EnvironmentDirectoryLookup) private readonly environments: () => EnvironmentDirectory | null,
  ) {}

  private async manifest(projectId: string): Promise<StoredManifest> {
    const manifest = await this.manifests.current(projectId);
    if (!manifest) throw Boom.notFound(`project ${projectId} has no synced manifest`);
    return manifest;
  }

  async definition(projectId: string, name: string): Promise<{ manifest: StoredManifest; pipeline: PipelineDefinition }> {
    const manifest = await this.manifest(projectId);
    const pipelines = manifest.parsed.pipelines ?? {};
    if (!Object.hasOwn(pipelines, name)) throw Boom.notFound(`pipeline ${name} not found in the project's manifest`);
    return { manifest, pipeline: pipelines[name] };
  }

  /**
   * Starts a run; nothing is written on a refusal. Its inputs: the pipeline's declared defaults,
   * the environment's pipeline_inputs, the request's (run-inputs.ts); `from` says who gave them.
   */
  async start(creator: Creator, projectId: string, name: string, request: RunRequest, from: InputsFrom): Promise<Run> {
    const { manifest, pipeline } = await this.definition(projectId, name);
    const base = request.env_inputs ?? (await this.environmentInputs(manifest, name, request.env));
    const inputs = runInputs(name, pipeline, base, request.inputs ?? {}, from);
    const steps = selectSteps(pipeline.steps, request.only_steps);
    const id = newId('prun');
    const graph: GraphJob[] = steps.map((step) => ({
      key: step.name,
      depends_on: step.depends_on,
      request: stepRequest(id, name, pipeline, step, request, inputs),
    }));
    return this.db.transaction(async (trx) => {
      const jobIds = await this.graphs.create(creator, projectId, graph, trx);
      await this.runs.insert(
        {
          id,
          project_id: projectId,
          pipeline_name: name,
          ref: request.ref ?? null,
          git_sha: request.ref && GIT_SHA.test(request.ref) ? request.ref : null,
          env_name: request.env ?? null,
          inputs,
          only_steps: request.only_steps ?? null,
          manifest_hash: manifest.manifest_hash,
          created_by: creator.id,
        },
        steps.map((step, position) => ({
          run_id: id,
          name: step.name,
          position,
          job_id: jobIds.get(step.name)!,
          execution_type: stepKind(step),
          depends_on: step.depends_on,
          approval: step.approval === true,
        })),
        trx,
      );
      await this.runs.appendEvents(trx, [
        { run_id: id, step_name: null, type: 'run.status', data: { run_id: id, status: 'pending', error_message: null, at: new Date() } },
      ]);
      const [run] = await this.settle([id], trx);
      return this.runs.withSteps(run, trx);
    });
  }

  /**
   * The environment's `pipeline_inputs` when it runs this pipeline. The environments domain knows
   * every environment (the manifest's, and those created through the API or `env-ensure`) and
   * refuses a suspended one (409); without that domain, the manifest's. 422 for one that exists nowhere.
   */
  private async environmentInputs(manifest: StoredManifest, pipeline: string, env: string | undefined): Promise<Record<string, unknown>> {
    if (env === undefined) return {};
    const environments = manifest.parsed.environments ?? {};
    const known = (await this.environments()?.forRun(manifest.project_id, env)) ?? (Object.hasOwn(environments, env) ? environments[env] : null);
    if (!known) throw Boom.badData(`environment '${env}' does not exist: the manifest does not define it and it was not created through the API or env-ensure`);
    return known.pipeline === pipeline ? (known.pipeline_inputs ?? {}) : {};
  }

  /** The job phase listener: steps of pipeline runs follow their jobs. */
  readonly follow = async (jobs: JobPhaseChange[], trx: Db): Promise<void> => {
    const runIds = [...new Set(jobs.map((j) => j.hints.pipeline_run_id).filter((id): id is string => typeof id === 'string'))].sort();
    if (runIds.length > 0) await this.settle(runIds, trx);
  };

  /** The attempt log listener: a step's output lines become its run's `step.log` events, in the appending transaction. */
  readonly stepLog = async ({ job_id, hints, lines }: AppendedLogs, trx: Db): Promise<void> => {
    const runId = hints.pipeline_run_id;
    const step = hints.step_name;
    if (typeof runId !== 'string' || typeof step !== 'string') return;
    await this.runs.appendEvents(
      trx,
      lines.map((l) => ({ run_id: runId, step_name: step, type: 'step.log', data: { step_name: step, job_id, line: l.line, at: l.at } })),
    );
  };

  /** The runs' steps, each with its job's phase and close reason (asked of the jobs domain). */
  private async stepsWithJobs(runIds: string[], trx: Db): Promise<StepWithJob[]> {
    const steps = await this.runs.stepsOfRuns(runIds, trx);
    const jobs = await this.graphs.phases(
      steps.map((s) => s.job_id),
      trx,
    );
    return steps.map((s) => ({ ...s, job_phase: jobs.get(s.job_id)!.phase, job_close_reason: jobs.get(s.job_id)!.close_reason }));
  }

  /**
   * Settles runs after their jobs changed (settle.ts decides; nothing is read or written per run):
   * all of a claim batch's runs are locked, read and written in a handful of statements.
   */
  private async settle(runIds: string[], trx: Db): Promise<RunRow[]> {
    const runs = await this.runs.lock(runIds, trx);
    const steps = await this.stepsWithJobs(runIds, trx);
    const now = new Date();
    const settlements = runs.map((run) =>
      settleRun(
        run,
        steps.filter((s) => s.run_id === run.id),
        now,
      ),
    );
    return this.write(runs, settlements, trx);
  }

  /**
   * Writes settlements: steps and the event log in one statement each, changed runs one by one
   * (their status changes rarely), `system.pipeline.failed` for a run that failed now, and last the
   * cancels of doomed steps' jobs, so the settles those cause find nothing left to change.
   */
  private async write(runs: RunRow[], settlements: Settlement[], trx: Db): Promise<RunRow[]> {
    await this.runs.updateSteps(
      settlements.flatMap((s) => s.steps),
      trx,
    );
    await this.runs.appendEvents(
      trx,
      settlements.flatMap((s) => s.events),
    );
    const written: RunRow[] = [];
    for (const [i, run] of runs.entries()) {
      const { run: changes, failed } = settlements[i];
      const updated = changes ? await this.runs.updateRun(run.id, changes, trx) : run;
      if (changes?.status === 'failed') await this.emitFailed(updated, failed, trx);
      written.push(updated);
    }
    for (const [i, run] of runs.entries()) {
      if (settlements[i].doomed.length > 0)
        await this.graphs.cancel(settlements[i].doomed, `pipeline run ${run.id}: step ${settlements[i].failed?.name ?? 'a step'} failed`, trx);
    }
    return written;
  }

  private emitFailed(run: RunRow, step: StepWithJob | null, trx: Db): Promise<unknown> {
    return emitEvent(trx, {
      project_id: run.project_id,
      type: 'system.pipeline.failed',
      source: 'system',
      env_name: run.env_name,
      ref_sha: run.git_sha,
      actor_type: 'system',
      payload: {
        run_id: run.id,
        pipeline_name: run.pipeline_name,
        error_message: run.error_message,
        error_code: STEP_FAILED,
        exit_code: null,
        mutation_id: null,
        request_id: null,
        metadata: { step_name: step?.name ?? null, job_id: step?.job_id ?? null, project_id: run.project_id },
      },
    });
  }

  async approve(principal: Principal, runId: string): Promise<Run> {
    return this.db.transaction(async (trx) => {
      const [run] = await this.runs.lock([runId], trx);
      if (run.status !== 'awaiting_approval') throw Boom.conflict(`pipeline run ${runId} is ${run.status}: only a run awaiting approval can be approved`);
      const waiting = (await this.stepsWithJobs([runId], trx)).filter((s) => s.status === 'awaiting_approval');
      const now = new Date();
      for (const step of waiting) await this.runs.updateStep(runId, step.name, { status: 'pending', approved_by: principal.id, approved_at: now }, trx);
      await this.runs.appendEvents(
        trx,
        waiting.map((step) => ({
          run_id: runId,
          step_name: step.name,
          type: 'step.status' as const,
          data: { run_id: runId, step_name: step.name, job_id: step.job_id, status: 'pending', approved_by: principal.id, at: now },
        })),
      );
      await this.graphs.release(
        waiting.map((s) => s.job_id),
        trx,
      );
      const [settled] = await this.settle([runId], trx);
      return this.runs.withSteps(settled, trx);
    });
  }

  async cancel(runId: string, reason: string | undefined): Promise<Run> {
    return this.db.transaction(async (trx) => {
      // Jobs before the run, the order a claim takes them in (job, then its run's settle).
      await this.graphs.lock(
        (await this.runs.steps(runId, trx)).map((s) => s.job_id),
        trx,
      );
      const [run] = await this.runs.lock([runId], trx);
      if (isTerminal(run.status)) throw Boom.conflict(`pipeline run ${runId} already ended: ${run.status}`);
      const steps = await this.stepsWithJobs([runId], trx);
      const now = new Date();
      const out = emptySettlement();
      for (const step of steps.filter((s) => !isTerminal(s.status))) {
        moveStep(out, step, 'cancelled', now);
        out.doomed.push(step.job_id);
      }
      moveRun(out, run, 'cancelled', steps, now, reason ?? null);
      const why = reason ? `pipeline run ${runId} cancelled: ${reason}` : `pipeline run ${runId} cancelled`;
      const doomed = out.doomed.splice(0);
      const [cancelled] = await this.write([run], [out], trx);
      await this.graphs.cancel(doomed, why, trx);
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
function stepRequest(
  runId: string,
  pipeline: string,
  definition: PipelineDefinition,
  step: PipelineStep,
  request: RunRequest,
  inputs: Record<string, unknown>,
): GraphJob['request'] {
  const hints: Record<string, unknown> = {
    pipeline_run_id: runId,
    pipeline_name: pipeline,
    step_name: step.name,
    execution_type: stepKind(step),
    step: stepExecution(step),
    depends_on: step.depends_on,
    request_json: JSON.stringify(inputs),
  };
  if ('script' in step && step.script.timeout) hints.timeout_seconds = step.script.timeout;
  const { git: runGit, workspace } = runWorkspace(definition, step);
  const git = { ...runGit, ...(request.ref ? { ref: request.ref } : {}) };
  return {
    title: `${pipeline}: ${step.name}`,
    description: `Step ${step.name} of pipeline ${pipeline}, run ${runId} (${describeStep(step)})`,
    labels: [`pipeline:${pipeline}`, `step:${step.name}`],
    hints,
    ...(step.approval ? { phase: 'backlog' } : {}),
    ...(Object.keys(git).length > 0 ? { git } : {}),
    ...(workspace ? { workspace } : {}),
    ...(request.env ? { env_name: request.env } : {}),
  };
}
