import Boom from '@hapi/boom';
import Joi from 'joi';
import type { Request, ResponseToolkit, ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { authenticated, principalOf } from '../../core/http/access.ts';
import { docs, timestamp } from '../../core/http/schemas.ts';
import { CSRF_HEADER, SESSION_COOKIE } from '../../core/auth/session-cookie.ts';
import { Tokens } from '../../core/tokens.ts';
import { ConsoleSessions, type ConsoleSession } from './sessions.ts';

const tags = ['api', 'console'];
const TOKEN_MAX = 8192;

const sessionRequest = Joi.object({
  token: Joi.string().max(TOKEN_MAX).description('A bearer token (pasted, or returned by POST /auth/exchange)'),
  code: Joi.string().max(200).description('The one-time code of a login link'),
})
  .xor('token', 'code')
  .label('ConsoleSessionRequest');

const sessionResponse = Joi.object({
  kind: Joi.string().valid('user', 'service_account', 'job').required(),
  id: Joi.string().required(),
  email: Joi.string().allow(null).required(),
  expires_at: timestamp.required(),
}).label('ConsoleSession');

const linkResponse = Joi.object({
  url: Joi.string().required().description('Open within expires_at; it works once'),
  expires_at: timestamp.required(),
}).label('ConsoleLoginLink');

/** Session routes take the CSRF header too: a page elsewhere cannot sign a browser into another account. */
function requireCsrfHeader(request: Request): void {
  if (!request.headers[CSRF_HEADER]) throw Boom.forbidden(`the console's session routes need the ${CSRF_HEADER} header`);
}

function origin(request: Request, publicUrl: string | null): string {
  return (publicUrl ?? `${request.server.info.protocol}://${request.info.host}`).replace(/\/+$/, '');
}

export function consoleRoutes(container: DependencyContainer): ServerRoute[] {
  const sessions = container.resolve(ConsoleSessions);
  const publicUrl = container.resolve(Tokens.Config).server.public_url;

  const signIn = (h: ResponseToolkit, session: ConsoleSession) =>
    h
      .response({ kind: session.principal.kind, id: session.principal.id, email: session.principal.email, expires_at: session.expiresAt.toISOString() })
      .state(SESSION_COOKIE, session.token, { ttl: Math.max(0, session.expiresAt.getTime() - Date.now()) })
      .header('cache-control', 'no-store');

  return [
    {
      method: 'POST',
      path: '/auth/console/session',
      options: {
        id: 'signInConsole',
        auth: false,
        tags,
        description: `Sign the web console in: a token or a login link's code becomes an HttpOnly, SameSite=Strict session cookie (needs the ${CSRF_HEADER} header)`,
        plugins: docs(400, 401, 403),
        validate: { payload: sessionRequest },
        response: { schema: sessionResponse },
      },
      handler: async (request, h) => {
        requireCsrfHeader(request);
        const { token, code } = request.payload as { token?: string; code?: string };
        return signIn(h, token ? await sessions.fromToken(token) : await sessions.fromCode(code!));
      },
    },
    {
      method: 'DELETE',
      path: '/auth/console/session',
      options: {
        id: 'signOutConsole',
        auth: false,
        tags,
        description: `Sign the web console out: clears the session cookie (needs the ${CSRF_HEADER} header)`,
        plugins: docs(204, 403),
      },
      handler: (request, h) => {
        requireCsrfHeader(request);
        return h.response().code(204).unstate(SESSION_COOKIE);
      },
    },
    {
      method: 'POST',
      path: '/auth/console/links',
      options: {
        id: 'createConsoleLoginLink',
        tags,
        description: 'A login link to the web console for the caller, signed in as the caller; it works once, within a minute (svc console)',
        plugins: { ...authenticated, ...docs(401, 403) },
        response: { status: { 201: linkResponse } },
      },
      handler: async (request, h) => {
        const { code, expiresAt } = await sessions.createLink(principalOf(request));
        // The code rides in the fragment: browsers never send it, so no server or proxy logs it.
        const url = `${origin(request, publicUrl)}/console/login#code=${code}`;
        return h.response({ url, expires_at: expiresAt.toISOString() }).code(201).header('cache-control', 'no-store');
      },
    },
  ];
}
