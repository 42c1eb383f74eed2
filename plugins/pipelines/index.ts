import Boom from '@hapi/boom';
import type { DomainPlugin } from '../../core/http/plugins.ts';
import { AccessTargets } from '../../core/http/access.ts';
import { Tokens } from '../../core/tokens.ts';
import { JobPhaseListeners } from '../../core/ports/jobs.ts';
import { AttemptLogListeners } from '../../core/ports/attempts.ts';
import { PipelineLauncherToken } from '../../core/ports/launchers.ts';
import { PipelineRunRepository } from './repository.ts';
import { RunEventBus } from './bus.ts';
import { PipelineRuns } from './runs.ts';
import { pipelineRunRoutes } from './routes.ts';
import { PipelineStats } from './stats.ts';
import { PipelineStatisticsToken } from '../../core/ports/stats.ts';
import { EnvironmentDirectoryLookup, EnvironmentDirectoryToken } from '../../core/ports/environments.ts';
import { lookupLater } from '../../core/di.ts';
import { describeTags } from '../../core/http/openapi.ts';

/**
 * Pipeline runs: a run lays a manifest pipeline out as jobs (through the JobGraphs port) and
 * follows them (a JobPhaseListener); approvals, cancel, and server-sent event streams.
 */
export const plugin: DomainPlugin = {
  name: 'pipelines',
  dependencies: ['projects', 'manifest', 'jobs'],
  register(server, { container }) {
    describeTags(server, {
      pipelines:
        "Pipelines defined in the manifest and their runs: one job per step, wired by depends_on; approvals, cancellation and the runs' live event streams.",
    });
    for (const cls of [RunEventBus, PipelineRunRepository]) container.registerSingleton(cls as never);
    // The environments plugin registers after this one: the environments a run names are looked up when it starts.
    if (!container.isRegistered(EnvironmentDirectoryLookup))
      container.registerInstance(EnvironmentDirectoryLookup, lookupLater(container, EnvironmentDirectoryToken));
    const service = container.resolve(PipelineRuns);
    container.resolve(JobPhaseListeners).add(service.follow);
    container.resolve(AttemptLogListeners).add(service.stepLog);
    container.registerSingleton(PipelineStatisticsToken, PipelineStats);
    container.registerInstance(PipelineLauncherToken, {
      // Triggers and deploys: an event's payload or a release's fields pass through a pipeline's declared inputs.
      runPipeline: async (creator, projectId, name, request) => ({ run_id: (await service.start(creator, projectId, name, request, 'platform')).id }),
    });
    const db = container.resolve(Tokens.Db);
    // /pipeline-runs/{run_id} routes act on the run's project; an unknown run and a hidden one are both 404.
    container.resolve(AccessTargets).register('pipeline_run', async (request) => {
      const notFound = `pipeline run ${request.params.run_id} not found`;
      const run = await db('pipeline_runs').where({ id: request.params.run_id }).first('project_id');
      if (!run) throw Boom.notFound(notFound);
      return { project: run.project_id, notFound };
    });
    server.route(pipelineRunRoutes(container, service));
    server.ext('onPostStop', () => container.resolve(RunEventBus).close());
  },
};
