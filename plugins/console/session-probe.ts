import Boom from '@hapi/boom';
import Joi from 'joi';
import type { Request, ResponseToolkit, ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { docs, timestamp } from '../../core/http/schemas.ts';
import { SESSION_COOKIE } from '../../core/auth/session-cookie.ts';
import { Tokens } from '../../core/tokens.ts';
import { ConsoleSessions } from './sessions.ts';

const probeResponse = Joi.object({
  access_token: Joi.string().required(),
  token_type: Joi.string().valid('Bearer').required(),
  expires_at: timestamp.required(),
  user: Joi.object({ id: Joi.string().required(), email: Joi.string().allow(null).required() })
    .required()
    .label('SessionUser'),
}).label('SignOnSession');

/** An https origin on the cookie's domain (the only pages that share the cookie anyway). */
function allowedOrigin(origin: string | undefined, domain: string): string | null {
  if (!origin) return null;
  try {
    const url = new URL(origin);
    const host = url.hostname.toLowerCase();
    const ok = url.protocol === 'https:' && (host === domain || host.endsWith(`.${domain}`));
    return ok && url.origin === origin ? origin : null;
  } catch {
    return null;
  }
}

/**
 * The sign-on broker's `GET /session`: an app's frontend on a host under `auth.session_cookie_domain`
 * probes it with the root-domain session cookie (credentials included) and gets the session's token
 * to keep, or 401 and shows its login form. Off (404) while the cookie is host-only: it would hand
 * the console's HttpOnly token to page script for nothing. CORS with credentials is answered for
 * https origins on that domain only; errors carry it too, so the page can read the 401.
 */
export function sessionProbeRoutes(container: DependencyContainer): ServerRoute[] {
  const sessions = container.resolve(ConsoleSessions);
  const domain = container.resolve(Tokens.Config).auth.session_cookie_domain?.toLowerCase() ?? null;
  const answer = (request: Request, h: ResponseToolkit, body: object, code: number) => {
    const response = h.response(body).code(code).header('cache-control', 'no-store').header('vary', 'Origin');
    const origin = domain ? allowedOrigin(request.headers.origin as string | undefined, domain) : null;
    if (origin) response.header('access-control-allow-origin', origin).header('access-control-allow-credentials', 'true');
    return response;
  };
  const refused = (request: Request, h: ResponseToolkit, err: Boom.Boom) => answer(request, h, err.output.payload, err.output.statusCode);
  return [
    {
      method: 'GET',
      path: '/session',
      options: {
        id: 'probeSignOnSession',
        auth: false,
        tags: ['api', 'auth'],
        description:
          "The sign-on broker's session probe: the token of the root-domain session cookie (auth.session_cookie_domain), for an app's frontend on that domain; 401 without a valid session; 404 while the cookie is host-only",
        plugins: docs(401, 404),
        response: { status: { 200: probeResponse } },
      },
      handler: async (request, h) => {
        if (!domain) return refused(request, h, Boom.notFound('the sign-on broker is off: set auth.session_cookie_domain to share the session'));
        const token = (request.state as Record<string, unknown>)[SESSION_COOKIE];
        if (typeof token !== 'string' || !token) return refused(request, h, Boom.unauthorized('no session: sign in'));
        try {
          const session = await sessions.fromToken(token);
          if (session.principal.kind !== 'user') return refused(request, h, Boom.unauthorized('no user session: sign in'));
          const body = {
            access_token: session.token,
            token_type: 'Bearer',
            expires_at: session.expiresAt.toISOString(),
            user: { id: session.principal.id, email: session.principal.email },
          };
          return answer(request, h, body, 200);
        } catch (e) {
          if (Boom.isBoom(e) && e.output.statusCode === 401) return refused(request, h, e);
          throw e;
        }
      },
    },
  ];
}
