import Boom from '@hapi/boom';
import type { Server } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { TokenRejected, TokenService } from './tokens.ts';
import { isNostrHeader, NostrRequestAuth, type NostrArtifacts } from './nostr-request.ts';
import { CSRF_HEADER, declareSessionCookie, lacksCsrfHeader, SESSION_COOKIE } from './session-cookie.ts';
import { Tokens } from '../tokens.ts';

// The scheme name is case-insensitive (RFC 7235 section 2.1): 'bearer <jwt>' is the same header.
const BEARER = /^Bearer +(\S+)$/i;
const JWT_SHAPE = /^[A-Za-z0-9\-_=]+\.[A-Za-z0-9\-_=]+\.[A-Za-z0-9\-_=]+$/;

/**
 * 401 with the documented body `{statusCode, error, message}` (no Boom `attributes`) and an RFC 6750
 * challenge header: `Bearer` alone when no credentials came, else `Bearer error="<code>", error_description="<message>"`.
 */
function unauthorized(message: string, code?: 'invalid_request' | 'invalid_token'): Boom.Boom {
  const err = Boom.unauthorized(message);
  const quoted = message.replace(/["\\]/g, '');
  err.output.headers['WWW-Authenticate'] = code ? `Bearer error="${code}", error_description="${quoted}"` : 'Bearer';
  return err;
}

/**
 * `Authorization: Bearer <jwt>` on every route that does not say `auth: false`; or `Authorization: Nostr
 * <signed event>` (docs/nostr.md), whose body hash is checked by `payload` once hapi has read the body;
 * or, without an Authorization header, the web console's session cookie (writes need the CSRF header).
 */
export function installAuthScheme(server: Server, container: DependencyContainer): void {
  const tokens = container.resolve(TokenService);
  const nostr = container.resolve(NostrRequestAuth);
  const config = container.resolve(Tokens.Config);
  const publicUrl = config.server.public_url;
  declareSessionCookie(server, Boolean(publicUrl?.startsWith('https:')), config.auth.session_cookie_domain, publicUrl);
  const principalOf = async (token: string) => {
    if (!JWT_SHAPE.test(token)) throw unauthorized('invalid token', 'invalid_token');
    try {
      return { credentials: { principal: await tokens.authenticate(token) } };
    } catch (e) {
      if (e instanceof TokenRejected) throw unauthorized(e.message, 'invalid_token');
      throw e;
    }
  };
  server.auth.scheme('svc-bearer', () => ({
    options: { payload: true },
    payload: (request, h) => {
      const artifacts = request.auth.artifacts as Partial<NostrArtifacts> | null;
      if (artifacts?.nostrEvent) nostr.checkPayload(request, artifacts as NostrArtifacts);
      return h.continue;
    },
    authenticate: async (request, h) => {
      const header = request.headers.authorization;
      const session = (request.state as Record<string, unknown> | null)?.[SESSION_COOKIE];
      if (!header && typeof session === 'string' && session) {
        if (lacksCsrfHeader(request.method, request.headers)) {
          throw Boom.forbidden(`a write signed in by the console's session cookie needs the ${CSRF_HEADER} header`);
        }
        return h.authenticated(await principalOf(session));
      }
      if (!header) throw unauthorized('missing bearer token');
      if (isNostrHeader(String(header))) return h.authenticated(await nostr.authenticate(request, String(header)));
      const match = BEARER.exec(String(header).trim());
      if (!match) throw unauthorized('malformed authorization header: expected Bearer <token>', 'invalid_request');
      return h.authenticated(await principalOf(match[1]));
    },
  }));
  server.auth.strategy('bearer', 'svc-bearer');
  server.auth.default('bearer');
}
