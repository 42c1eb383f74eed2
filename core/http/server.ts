import http from 'node:http';
import type { Duplex } from 'node:stream';
import Hapi, { type Request, type ResponseToolkit, type Server } from '@hapi/hapi';
import Boom from '@hapi/boom';
import Inert from '@hapi/inert';
import Vision from '@hapi/vision';
import type { DependencyContainer } from 'tsyringe';
import { Tokens } from '../tokens.ts';
import { Access } from '../auth/access.ts';
import { installAuthScheme } from '../auth/scheme.ts';
import { AccessTargets, installAccessCheck } from './access.ts';
import { loadDomainPlugins } from './plugins.ts';
import { installStorableInputCheck } from './storable-input.ts';
import { addLimitHeaders, installRateLimit } from './rate-limit.ts';
import { installClientAddress } from './client-address.ts';
import { isDatabaseBusy } from '../db/unavailable.ts';
import { requestRoute } from '../db/route-share.ts';
import { Metrics } from '../metrics.ts';
import { measureRequests } from './request-metrics.ts';
import { logRequests } from './request-log.ts';
import { installOpenApi } from './openapi.ts';

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

/**
 * The HTTP server hapi listens with: a client has `server.body_timeout_ms` to send its whole
 * request, headers and body (Node's requestTimeout; headers alone at most 60 s), so a body trickled
 * in a byte at a time holds no connection for long. Node checks for late requests this often; its
 * own default (30 s) would let one run that much over.
 */
export function createListener(bodyTimeoutMs: number): http.Server {
  return http.createServer({
    requestTimeout: bodyTimeoutMs,
    headersTimeout: Math.min(60_000, bodyTimeoutMs),
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(bodyTimeoutMs / 4))),
  });
}

/** How long a socket answered 408 is kept reading what the client still sends, so it reads the answer before the close. */
const LINGER_MS = 1000;

/**
 * A request not received within `server.body_timeout_ms` is answered 408 (hapi answers every client
 * error 400, and only after reading the body to its end) and its connection closed. Other client
 * errors stay hapi's. Call once, after the hapi server is made on createListener's server.
 */
export function answerLateRequests(server: Server, bodyTimeoutMs: number): void {
  const listener = server.listener;
  const responses = new WeakMap<Duplex, http.ServerResponse>();
  listener.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => responses.set(req.socket, res));
  const hapiHandlers = listener.listeners('clientError') as ((err: Error, socket: Duplex) => void)[];
  listener.removeAllListeners('clientError');
  listener.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code !== 'ERR_HTTP_REQUEST_TIMEOUT') {
      for (const handler of hapiHandlers) handler.call(listener, err, socket);
      return;
    }
    server.log(['connection', 'client', 'timeout'], `request not received within server.body_timeout_ms (${bodyTimeoutMs} ms): 408`);
    if (!socket.writable || responses.get(socket)?.headersSent) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify({
      statusCode: 408,
      error: 'Request Time-out',
      message: `the request was not received within ${bodyTimeoutMs} ms (server.body_timeout_ms)`,
    });
    socket.end(
      `HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  });
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
    listener: createListener(config.server.body_timeout_ms),
    router: { stripTrailingSlash: true },
    routes: {
      validate: { failAction: validationFailed, options: { abortEarly: false } },
      response:
        responseValidation === 'off'
          ? undefined
          : { failAction: responseValidation, sample: config.server.response_validation_sample, options: { abortEarly: false } },
      // No payload timeout of hapi's: the listener's (server.body_timeout_ms) answers 408 without first waiting for the rest of the body.
      payload: { maxBytes: 1024 * 1024, allow: 'application/json', failAction: payloadFailed, timeout: false },
    },
  });
  answerLateRequests(server, config.server.body_timeout_ms);
  installClientAddress(server, config.server.trusted_proxies); // first: the rate limiter, the log and local-client checks read it
  server.app.container = container;
  // From routing on, the request's statements count against its route's share of the pool (core/db/route-share.ts).
  server.ext('onPreAuth', (request, h) => {
    requestRoute.enterWith(`${request.method.toUpperCase()} ${request.route.path}`);
    return h.continue;
  });
  measureRequests(server, container.resolve(Metrics));
  logRequests(server, logger);

  await server.register([Inert, Vision]);
  await installOpenApi(server);

  installAuthScheme(server, container);
  installRateLimit(server, container.resolve(Tokens.Db), config.limits.requests); // per caller, before any other work of the request
  installStorableInputCheck(server); // before the access check: its 400 comes before 403/404
  installAccessCheck(server, container.resolve(Access), container.resolve(AccessTargets));

  server.ext('onPreResponse', (request, h) => {
    addLimitHeaders(request);
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
