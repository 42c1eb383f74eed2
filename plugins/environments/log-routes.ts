import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { Logger } from 'pino';
import { requires } from '../../core/http/access.ts';
import { docs, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema, pageSchema } from '../../core/http/lists.ts';
import { paramsOf, queryOf } from '../../core/http/request.ts';
import { openEventStream, sseFrame } from '../../core/http/sse.ts';
import type { EnvironmentService } from './service.ts';
import type { DeployLogs } from './deploy-logs.ts';
import { deployParams } from './schemas.ts';

const MAX_LOG_PAGE = 1000;

const logQuery = listQuerySchema.keys({
  limit: Joi.number().integer().min(1).max(MAX_LOG_PAGE).default(100).description(`lines per page, 1 to ${MAX_LOG_PAGE}`),
  after_seq: Joi.number().integer().min(0).default(0).description('only lines with a greater seq (a cursor: the last seq read)'),
  follow: Joi.boolean().default(false).description('stream as server-sent events (also chosen by Accept: text/event-stream)'),
  last_event_id: Joi.number().integer().min(0).description('with follow: resume after this seq (the Last-Event-ID header wins)'),
});
const lineSchema = Joi.object({
  seq: Joi.number().integer().min(1).required(),
  stream: Joi.string().valid('system', 'deployer').required().description("system: svc's own lines; deployer: what the deployer reported"),
  line: Joi.string().allow('').required(),
  at: timestamp.required(),
}).label('DeployLogLine');

interface LogQuery {
  limit: number;
  offset: number;
  after_seq: number;
  follow: boolean;
}

/** A deploy's log: a page of lines, or (follow / Accept: text/event-stream) a live stream with resume that ends with the deploy. */
export function deployLogRoutes(service: EnvironmentService, logs: DeployLogs, logger: Logger): ServerRoute[] {
  return [
    {
      method: 'GET',
      path: '/projects/{project_id}/environments/{env}/deploys/{deploy_id}/logs',
      options: {
        tags: ['api', 'environments'],
        description:
          "A deploy's log, oldest first: svc's lines and the deployer's progress. With follow=true or Accept: text/event-stream: server-sent `log` events (id = seq) as they are written, then one `end` event with the deploy's status once it has ended (resume with Last-Event-ID)",
        plugins: { ...requires('environments:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: deployParams, query: logQuery },
        response: { schema: Joi.alternatives().try(pageSchema(lineSchema, 'DeployLogPage'), Joi.string().description('text/event-stream')), sample: 0 },
      },
      handler: async (request, h) => {
        const { project_id, env, deploy_id } = paramsOf(request);
        const q = queryOf<LogQuery>(request);
        const deploy = () => service.deployById(project_id, env, deploy_id);
        await deploy();
        const follow = q.follow || String(request.headers.accept ?? '').includes('text/event-stream');
        if (!follow) return logs.page(deploy_id, q.after_seq, q);
        return openEventStream(
          request,
          h,
          {
            subscribe: (wake) => logs.bus.subscribe(deploy_id, wake),
            ended: async () => service.deployEnded(await deploy()),
            after: async (afterSeq) => (await logs.after(deploy_id, afterSeq)).map((l) => ({ id: l.seq, type: 'log', data: l })),
            closing: async () => {
              const d = await deploy();
              return sseFrame({ type: 'end', data: { deploy_id: d.id, status: d.status, error_message: d.error_message } });
            },
          },
          logger,
          'deploy log',
        );
      },
    },
  ];
}
