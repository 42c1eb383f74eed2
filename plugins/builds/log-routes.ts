import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import { requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema } from '../../core/http/lists.ts';
import { followedLogQuery, lineEvents, logLineSchema, wantsStream, type LogPageQuery } from '../../core/http/line-logs.ts';
import { paramsOf, queryOf } from '../../core/http/request.ts';
import { openEventStream, sseFrame } from '../../core/http/sse.ts';
import { NotFound } from '../../core/errors.ts';
import { BuildLogs } from './logs.ts';
import { BuildRepository } from './repository.ts';
import { ACTIVE_STATUSES, buildParams, runId } from './schemas.ts';
import { tags } from './routes.ts';

const logQuery = followedLogQuery.keys({ run_id: runId.description('a run of this build (default: the latest)') });
const lineSchema = logLineSchema('BuildLogLine', ['stdout', 'stderr', 'system']);

/** A run's builder output: a page of lines, or (follow / Accept: text/event-stream) a live stream with resume. */
export function logRoutes(container: DependencyContainer): ServerRoute[] {
  const logs = container.resolve(BuildLogs);
  const builds = container.resolve(BuildRepository);
  const logger = container.resolve(Tokens.Logger);

  const runOf = async (buildId: string, wanted?: string) => {
    const run = wanted ? await builds.run(wanted) : (await builds.latestRuns([buildId])).get(buildId);
    if (!run || run.build_id !== buildId) throw new NotFound(wanted ? `run ${wanted} of build ${buildId} not found` : `build ${buildId} has no runs`);
    return run;
  };

  return [
    {
      method: 'GET',
      path: '/builds/{build_id}/logs',
      options: {
        id: 'getBuildLogs',
        tags,
        description:
          'Builder output of a run, oldest first. With follow=true or Accept: text/event-stream: server-sent `log` events (id = seq) as they are written, then one `end` event with the run status (resume with Last-Event-ID)',
        plugins: { ...requires('builds:read', 'build'), ...docs(400, 401, 403, 404) },
        validate: { params: buildParams, query: logQuery },
        response: { schema: Joi.alternatives().try(pageSchema(lineSchema, 'BuildLogPage'), Joi.string().description('text/event-stream')), sample: 0 },
      },
      handler: async (request, h) => {
        const { build_id } = paramsOf(request);
        const q = queryOf<LogPageQuery & { run_id?: string; follow: boolean }>(request);
        const run = await runOf(build_id, q.run_id);
        if (!wantsStream(request, q.follow)) return logs.page(run.id, q.after_seq, q);
        return openEventStream(
          request,
          h,
          {
            key: `build-log:${run.id}`,
            subscribe: (wake) => logs.bus.subscribe(run.id, wake),
            ended: async () => !ACTIVE_STATUSES.includes((await builds.run(run.id))!.status),
            after: lineEvents((afterSeq) => logs.after(run.id, afterSeq)),
            closing: async () => {
              const r = (await builds.run(run.id))!;
              return sseFrame({ type: 'end', data: { run_id: r.id, status: r.status, error_class: r.error_class, error_message: r.error_message } });
            },
          },
          logger,
          'build log',
        );
      },
    },
  ];
}
