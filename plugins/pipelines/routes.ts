import Boom from '@hapi/boom';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import { Tokens } from '../../core/tokens.ts';
import { JobGraphsToken } from '../../core/ports/jobs.ts';
import { PipelineRunRepository, type RunFilters, type RunRow } from './repository.ts';
import { type PipelineRuns, type RunRequest } from './runs.ts';
import { RunEventBus } from './bus.ts';
import { RunStream } from './stream.ts';
import * as S from './schemas.ts';

const tags = ['api', 'pipelines'];

export function pipelineRunRoutes(container: DependencyContainer, service: PipelineRuns): ServerRoute[] {
  const runs = container.resolve(PipelineRunRepository);
  const graphs = container.resolve(JobGraphsToken);
  const stream = new RunStream(runs, container.resolve(RunEventBus), container.resolve(Tokens.Logger));

  /** The run, when it is one of the project's (and of the named pipeline, when given); else 404. */
  const runIn = async (projectId: string, runId: string, pipeline?: string): Promise<RunRow> => {
    const run = await runs.byId(runId);
    if (!run || run.project_id !== projectId || (pipeline !== undefined && run.pipeline_name !== pipeline)) {
      throw Boom.notFound(`pipeline run ${runId} not found`);
    }
    return run;
  };

  return [
    {
      method: 'POST',
      path: '/projects/{project_id}/pipelines/{name}/run',
      options: {
        id: 'runPipeline',
        tags,
        description: 'Run a pipeline: one job per step, wired by depends_on',
        plugins: { ...requires('pipelines:run', 'project'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.pipelineParams, payload: S.runRequestSchema.allow(null) },
        response: { status: { 201: S.runSchema } },
      },
      handler: async (request, h) => {
        const { project_id, name } = paramsOf(request);
        const run = await service.start(principalOf(request), project_id, name, payloadOf<RunRequest | null>(request) ?? {}, 'caller');
        return h.response(run).code(201);
      },
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/pipelines/{name}/runs',
      options: {
        id: 'listPipelineRuns',
        tags,
        description: "A pipeline's runs, newest first",
        plugins: { ...requires('pipelines:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.pipelineParams, query: S.runsQuery },
        response: { schema: pageSchema(S.runSchema, 'PipelineRunList') },
      },
      handler: (request) => runs.list(paramsOf(request).project_id, paramsOf(request).name, queryOf<RunFilters>(request)),
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/pipelines/{name}/runs/{run_id}',
      options: {
        id: 'getRunOfPipeline',
        tags,
        description: 'One run of the pipeline',
        plugins: { ...requires('pipelines:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.pipelineRunParams },
        response: { schema: S.runSchema },
      },
      handler: async (request) => {
        const { project_id, name, run_id } = paramsOf(request);
        return runs.withSteps(await runIn(project_id, run_id, name));
      },
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/runs/{run_id}',
      options: {
        id: 'getPipelineRun',
        tags,
        description: 'One pipeline run of the project',
        plugins: { ...requires('pipelines:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.projectRunParams },
        response: { schema: S.runSchema },
      },
      handler: async (request) => runs.withSteps(await runIn(paramsOf(request).project_id, paramsOf(request).run_id)),
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/runs/{run_id}/jobs',
      options: {
        id: 'listPipelineRunJobs',
        tags,
        description: "The jobs of a run's steps, in step order",
        plugins: { ...requires('pipelines:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.projectRunParams },
        response: { schema: pageSchema(S.stepJobSchema, 'PipelineRunJobList') },
      },
      handler: async (request) => {
        const run = await runIn(paramsOf(request).project_id, paramsOf(request).run_id);
        const data = await graphs.read((await runs.steps(run.id)).map((s) => s.job_id));
        return { data, pagination: { limit: data.length, offset: 0, count: data.length, total: data.length, has_more: false } };
      },
    },
    {
      method: 'POST',
      path: '/pipeline-runs/{run_id}/approve',
      options: {
        id: 'approvePipelineRun',
        tags,
        description: 'Release the steps of a run that await approval',
        plugins: { ...requires('pipelines:approve', 'pipeline_run'), ...docs(400, 401, 403, 404, 409) },
        validate: { params: S.runParams, payload: S.approveSchema.allow(null) },
        response: { schema: S.runSchema },
      },
      handler: (request) => service.approve(principalOf(request), paramsOf(request).run_id),
    },
    {
      method: 'POST',
      path: '/pipeline-runs/{run_id}/cancel',
      options: {
        id: 'cancelPipelineRun',
        tags,
        description: 'Cancel a run: unfinished steps are cancelled and running attempts end',
        plugins: { ...requires('pipelines:approve', 'pipeline_run'), ...docs(400, 401, 403, 404, 409) },
        validate: { params: S.runParams, payload: S.cancelSchema.allow(null) },
        response: { schema: S.runSchema },
      },
      handler: (request) => service.cancel(paramsOf(request).run_id, payloadOf<{ reason?: string } | null>(request)?.reason),
    },
    {
      method: 'GET',
      path: '/pipeline-runs/{run_id}/stream',
      options: {
        id: 'streamPipelineRun',
        tags,
        description: "Server-sent events of the run's steps (resume with Last-Event-ID)",
        plugins: { ...requires('pipelines:read', 'pipeline_run'), ...docs(400, 401, 403, 404) },
        validate: { params: S.runParams, query: S.streamQuery },
        response: S.eventStream,
      },
      handler: (request, h) => stream.open(request, h, paramsOf(request).run_id, null),
    },
    {
      method: 'GET',
      path: '/pipeline-runs/{run_id}/steps/{name}/stream',
      options: {
        id: 'streamPipelineRunStep',
        tags,
        description: 'Server-sent events of one step of the run (resume with Last-Event-ID)',
        plugins: { ...requires('pipelines:read', 'pipeline_run'), ...docs(400, 401, 403, 404) },
        validate: { params: S.stepParams, query: S.streamQuery },
        response: S.eventStream,
      },
      handler: async (request, h) => {
        const { run_id, name } = paramsOf(request);
        if (!(await runs.steps(run_id)).some((s) => s.name === name)) throw Boom.notFound(`pipeline run ${run_id} has no step ${name}`);
        return stream.open(request, h, run_id, name);
      },
    },
  ];
}
