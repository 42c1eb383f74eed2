import Hapi, { type Plugin, type Request, type ResponseToolkit, type Server } from '@hapi/hapi';
import Boom from '@hapi/boom';
import Inert from '@hapi/inert';
import Vision from '@hapi/vision';
import HapiSwagger from 'hapi-swagger';
import type { DependencyContainer } from 'tsyringe';
import { Tokens } from '../tokens.ts';
import { Access } from '../auth/access.ts';
import { installAuthScheme } from '../auth/scheme.ts';
import { AccessTargets, installAccessCheck } from './access.ts';
import { loadDomainPlugins } from './plugins.ts';
import { installStorableInputCheck } from './storable-input.ts';
import { isDatabaseBusy } from '../db/unavailable.ts';
import { VERSION } from '../version.ts';
import { Metrics } from '../metrics.ts';
import { measureRequests } from './request-metrics.ts';
import { logRequests } from './request-log.ts';

/** Retry-After of a 503 for database overload: lock and pool waits are seconds long. */
const RETRY_AFTER_SECONDS = 2;

/** A body of another type than the route takes (curl -d sends a form) is 415 naming the type it takes. */
export function payloadFailed(request: Request, _h: ResponseToolkit, err?: Error): never {
  if (Boom.isBoom(err) && err.output.statusCode === 415) {
    const allowed = [request.route.settings.payload?.allow ?? 'application/json'].flat().join(' or ');
    throw Boom.unsupportedMediaType(
      `expected ${allowed}, got ${request.headers['content-type'] ?? 'no content type'}: send the body with content-type: ${allowed.split(' or ')[0]}`,
    );
  }
  throw err ?? Boom.badRequest('invalid request payload');
}

/** Joi failures answer 400 `{statusCode, error, message}` with every problem and its field path. */
export function validationFailed(_request: Request, _h: ResponseToolkit, err?: Error): never {
  const details = (err as { details?: { message: string }[] } | undefined)?.details;
  throw Boom.badRequest(details?.length ? details.map((d) => d.message).join('; ') : (err?.message ?? 'invalid request'));
}

declare module '@hapi/hapi' {
  interface ServerApplicationState {
    container: DependencyContainer;
  }
}

/** The hapi server: logging, docs, auth, access checks, and the domain plugins the config names. */
export async function createServer(container: DependencyContainer): Promise<Server> {
  const config = container.resolve(Tokens.Config);
  const logger = container.resolve(Tokens.Logger);
  const responseValidation = config.server.response_validation;

  const server = Hapi.server({
    host: config.server.host,
    port: config.server.port,
    router: { stripTrailingSlash: true },
    routes: {
      validate: { failAction: validationFailed, options: { abortEarly: false } },
      response:
        responseValidation === 'off'
          ? undefined
          : { failAction: responseValidation, sample: config.server.response_validation_sample, options: { abortEarly: false } },
      payload: { maxBytes: 1024 * 1024, allow: 'application/json', failAction: payloadFailed },
    },
  });
  server.app.container = container;
  measureRequests(server, container.resolve(Metrics));
  logRequests(server, logger);

  await server.register([
    Inert,
    Vision,
    {
      plugin: HapiSwagger as unknown as Plugin<unknown>,
      options: {
        OAS: 'v3.0',
        info: { title: 'svc API', version: VERSION, description: 'Runs AI coding agents on real repositories as tracked jobs.' },
        jsonPath: '/openapi.json',
        jsonRoutePath: '/openapi.json',
        documentationPath: '/docs',
        grouping: 'tags',
        validatorUrl: null,
        securityDefinitions: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
        security: [{ bearer: [] }],
      },
    },
  ]);

  installAuthScheme(server, container);
  installStorableInputCheck(server); // before the access check: its 400 comes before 403/404
  installAccessCheck(server, container.resolve(Access), container.resolve(AccessTargets));

  server.ext('onPreResponse', (request, h) => {
    let response = request.response;
    if (Boom.isBoom(response) && response.output.statusCode === 500 && isDatabaseBusy(response)) {
      // Overload or a database away is not the request's fault, and it passes: say when to come back.
      request.log(['warn', 'database'], response);
      response = Boom.serverUnavailable('the database is busy or unreachable; try again shortly');
      response.output.headers['retry-after'] = String(RETRY_AFTER_SECONDS);
      response.output.headers['x-request-id'] = request.info.id;
      return response;
    }
    if (Boom.isBoom(response)) {
      if (response.output.statusCode >= 500) request.log(['error'], response);
      response.output.headers['x-request-id'] = request.info.id;
      return h.continue;
    }
    response.header('x-request-id', request.info.id);
    return h.continue;
  });

  // The benchmark's constant routes (plugins/bench) only when a bench or test asks for them.
  await loadDomainPlugins(server, container, config.server.bench_routes ? [...config.plugins, 'bench'] : config.plugins);
  return server;
}
