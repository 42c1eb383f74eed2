import type { Request, Server } from '@hapi/hapi';
import type { Level, Logger } from 'pino';
import { clientAddressOf } from './client-address.ts';

/** Probes and scrapes come every few seconds: they never get a line. */
const QUIET_PATHS = new Set(['/health', '/health/live', '/metrics']);
/** The headers a request line shows (the credential as redacted, by the logger's own redaction). */
const SHOWN_HEADERS = ['authorization', 'user-agent', 'content-length'];
const TAG_LEVELS: Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

/** What a line says of its request: what was asked, by whom, from where; not every header. */
function requestFields(request: Request) {
  const headers: Record<string, string> = {};
  for (const name of SHOWN_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return { id: request.info.id, method: request.method, url: request.path, remoteAddress: clientAddressOf(request), headers };
}

/** The most severe level a log event's tags name, else `otherwise`. */
const levelOf = (tags: string[], otherwise: Level): Level => TAG_LEVELS.find((level) => tags.includes(level)) ?? otherwise;

/**
 * Request and server logging on the kernel's logger: a line per answered request (at info), a line
 * per request error or `request.log`, and server log events, at the level their tags name (errors
 * at error when they name none). Nothing is built for a
 * request unless a line is written, so below info a request costs the logger nothing (a child
 * logger per request, with its serializers and redaction, was 2–3 % of a job read's CPU).
 */
export function logRequests(server: Server, logger: Logger): void {
  server.events.on('response', (request) => {
    if (!logger.isLevelEnabled('info') || QUIET_PATHS.has(request.path)) return;
    const { received, responded, completed } = request.info;
    const responseTime = (completed || responded) - received;
    const statusCode = request.raw.res.headersSent ? request.raw.res.statusCode : undefined;
    logger.info(
      { req: requestFields(request), res: { statusCode }, responseTime },
      `[response] ${request.method} ${request.path} ${statusCode ?? '-'} (${responseTime}ms)`,
    );
  });

  server.events.on({ name: 'request', channels: ['app', 'error'] }, (request, event) => {
    if (QUIET_PATHS.has(request.path)) return;
    const req = requestFields(request);
    if (event.error) logger[levelOf(event.tags, 'error')]({ req, tags: event.tags, err: event.error }, (event.error as Error).message);
    else logger[levelOf(event.tags, 'info')]({ req, tags: event.tags, data: event.data });
  });

  server.events.on('log', (event) => {
    if (event.tags.includes('client')) return; // a client that drops its connection is routine
    if (event.error) logger[levelOf(event.tags, 'error')]({ tags: event.tags, err: event.error });
    else logger[levelOf(event.tags, 'info')]({ tags: event.tags, data: event.data });
  });

  server.ext('onPostStart', () => logger.info(server.info, 'server started'));
  server.ext('onPostStop', () => logger.info(server.info, 'server stopped'));
}
