import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { Logger } from 'pino';
import { requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema } from '../../core/http/lists.ts';
import { followedLogQuery, lineEvents, logLineSchema, wantsStream, type LogPageQuery } from '../../core/http/line-logs.ts';
import { paramsOf, queryOf } from '../../core/http/request.ts';
import { openEventStream, sseFrame } from '../../core/http/sse.ts';
import type { DeployService } from './deploy-service.ts';
import type { DeployLogs } from './deploy-logs.ts';
import { deployParams } from './schemas.ts';

const lineSchema = logLineSchema('DeployLogLine', ['system', 'deployer'], "system: svc's own lines; deployer: what the deployer reported");

/** A deploy's log: a page of lines, or (follow / Accept: text/event-stream) a live stream with resume that ends with the deploy. */
export function deployLogRoutes(service: DeployService, logs: DeployLogs, logger: Logger): ServerRoute[] {
  return [
    {
      method: 'GET',
      path: '/projects/{project_id}/environments/{env}/deploys/{deploy_id}/logs',
      options: {
        id: 'getDeployLogs',
        tags: ['api', 'environments'],
        description:
          "A deploy's log, oldest first: svc's lines and the deployer's progress. With follow=true or Accept: text/event-stream: server-sent `log` events (id = seq) as they are written, then one `end` event with the deploy's status once it has ended (resume with Last-Event-ID)",
        plugins: { ...requires('environments:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: deployParams, query: followedLogQuery },
        response: { schema: Joi.alternatives().try(pageSchema(lineSchema, 'DeployLogPage'), Joi.string().description('text/event-stream')), sample: 0 },
      },
      handler: async (request, h) => {
        const { project_id, env, deploy_id } = paramsOf(request);
        const q = queryOf<LogPageQuery & { follow: boolean }>(request);
        const deploy = () => service.deployById(project_id, env, deploy_id);
        await deploy();
        if (!wantsStream(request, q.follow)) return logs.page(deploy_id, q.after_seq, q);
        return openEventStream(
          request,
          h,
          {
            key: `deploy-log:${deploy_id}`,
            subscribe: (wake) => logs.bus.subscribe(deploy_id, wake),
            ended: async () => service.deployEnded(await deploy()),
            after: lineEvents((afterSeq) => logs.after(deploy_id, afterSeq)),
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
