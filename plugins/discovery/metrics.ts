import Boom from '@hapi/boom';
import type { Request, ServerRoute } from '@hapi/hapi';
import Joi from 'joi';
import type { DependencyContainer } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import { Metrics } from '../../core/metrics.ts';
import { sameSecret } from '../../core/crypto/hmac.ts';
import { clientOf, isLocalClient } from '../../core/http/local-client.ts';

/**
 * Who may scrape: with `metrics.token` set, whoever sends it as a bearer token (compared in equal
 * time); without it, only clients on this host, so a default install does not publish its job
 * counts and pool use to the network.
 */
function allowScrape(request: Request, token: string | null): void {
  if (token === null) {
    if (isLocalClient(clientOf(request))) return;
    throw Boom.forbidden('metrics are served to clients on this host only; set metrics.token (SVC_METRICS_TOKEN) and scrape with it as a bearer token');
  }
  const presented = /^Bearer (\S+)$/i.exec(String(request.headers.authorization ?? ''))?.[1];
  if (!presented || !sameSecret(presented, token)) throw Boom.unauthorized('metrics need the metrics token (metrics.token) as a bearer token');
}

/** `GET /metrics`: the process's metrics (core/metrics.ts) in the Prometheus text format; every role serves it. */
export function metricsRoute(container: DependencyContainer): ServerRoute {
  const { metrics: settings } = container.resolve(Tokens.Config);
  const metrics = container.resolve(Metrics);
  return {
    method: 'GET',
    path: '/metrics',
    options: {
      id: 'getMetrics',
      auth: false,
      description: 'Prometheus metrics of this process (text format): to clients on this host, or with metrics.token as a bearer token when it is set',
      tags: ['api', 'discovery'],
      plugins: {
        'hapi-swagger': {
          produces: ['text/plain'],
          responses: {
            200: { description: 'text/plain; version=0.0.4', schema: Joi.string().label('PrometheusText') },
            401: { description: 'metrics.token is set and was not sent' },
            403: { description: 'no metrics.token is set and the client is not on this host' },
          },
        },
      },
    },
    handler: async (request, h) => {
      allowScrape(request, settings.token);
      const { text, contentType } = await metrics.render();
      return h.response(text).type(contentType);
    },
  };
}
