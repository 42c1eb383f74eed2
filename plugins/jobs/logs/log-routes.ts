import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import { requires } from '../../../core/http/access.ts';
import { docs, eventStreamQuery, eventStreamResponse } from '../../../core/http/schemas.ts';
import { pageSchema } from '../../../core/http/lists.ts';
import { lineEvents, logLineSchema, logPageQuery, type LogPageQuery } from '../../../core/http/line-logs.ts';
import { paramsOf, queryOf } from '../../../core/http/request.ts';
import { openEventStream, sseFrame } from '../../../core/http/sse.ts';
import { AttemptLogs } from './attempt-logs.ts';
import { attemptParams, resolveAttemptRef } from '../attempts/attempt-ref.ts';
import { AttemptRepository } from '../attempts/attempts.ts';
import { NotFound } from '../../../core/errors.ts';

const tags = ['api', 'jobs'];

const lineSchema = logLineSchema('AttemptLogLine', ['stdout', 'stderr', 'system']);

/** The attempt's output: a page of lines in seq order, and a live stream of them. */
export function logRoutes(container: DependencyContainer): ServerRoute[] {
  const attemptRef = resolveAttemptRef(container.resolve(AttemptRepository));
  const logs = container.resolve(AttemptLogs);
  const db = container.resolve(Tokens.Db);
  const logger = container.resolve(Tokens.Logger);

  const attemptOf = async (jobId: string, attemptId: string) => {
    const attempt = await db('job_attempts').where({ id: attemptId, job_id: jobId }).first('id', 'status', 'result_status', 'error');
    if (!attempt) throw new NotFound(`attempt ${attemptId} of job ${jobId} not found`);
    return attempt;
  };

  return [
    {
      method: 'GET',
      path: '/jobs/{job_id}/attempts/{attempt_id}/logs',
      options: {
        id: 'getAttemptLogs',
        tags,
        description: 'Output lines of an attempt, oldest first (seq order); page with limit/offset or with after_seq as a cursor',
        plugins: { ...requires('jobs:read', 'job'), ...docs(400, 401, 403, 404) },
        pre: [attemptRef],
        validate: { params: attemptParams, query: logPageQuery },
        response: { schema: pageSchema(lineSchema, 'AttemptLogPage') },
      },
      handler: async (request) => {
        const { job_id, attempt_id } = paramsOf(request);
        await attemptOf(job_id, attempt_id);
        const q = queryOf<LogPageQuery>(request);
        return logs.page(attempt_id, q.after_seq, q);
      },
    },
    {
      method: 'GET',
      path: '/jobs/{job_id}/attempts/{attempt_id}/logs/stream',
      options: {
        id: 'streamAttemptLogs',
        tags,
        description:
          'Server-sent events: each output line (`log`, id = seq) as it is appended; `end` with the attempt status once it has ended (resume with Last-Event-ID)',
        plugins: { ...requires('jobs:read', 'job'), ...docs(400, 401, 403, 404) },
        pre: [attemptRef],
        validate: { params: attemptParams, query: eventStreamQuery('seq') },
        response: eventStreamResponse(
          'AttemptLogStream',
          '`log` events (id = seq, data = the line), then one `end` event (data: status, result_status, error)',
        ),
      },
      handler: async (request, h) => {
        const { job_id, attempt_id } = paramsOf(request);
        await attemptOf(job_id, attempt_id);
        return openEventStream(
          request,
          h,
          {
            key: `attempt-log:${attempt_id}`,
            subscribe: (wake) => logs.bus.subscribe(job_id, wake),
            ended: async () => (await attemptOf(job_id, attempt_id)).status !== 'running',
            after: lineEvents((afterSeq) => logs.after(attempt_id, afterSeq)),
            closing: async () => {
              const a = await attemptOf(job_id, attempt_id);
              return sseFrame({ type: 'end', data: { status: a.status, result_status: a.result_status, error: a.error } });
            },
          },
          logger,
          'attempt log',
        );
      },
    },
  ];
}
