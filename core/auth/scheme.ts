import Boom from '@hapi/boom';
import type { Server } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { TokenRejected, TokenService } from './tokens.ts';

// The scheme name is case-insensitive (RFC 7235 section 2.1): 'bearer <jwt>' is the same header.
const BEARER = /^Bearer +([A-Za-z0-9\-_=]+\.[A-Za-z0-9\-_=]+\.[A-Za-z0-9\-_=]+)$/i;

/** `Authorization: Bearer <jwt>` on every route that does not say `auth: false`. */
export function installAuthScheme(server: Server, container: DependencyContainer): void {
  const tokens = container.resolve(TokenService);
  server.auth.scheme('svc-bearer', () => ({
    authenticate: async (request, h) => {
      const header = request.headers.authorization;
      if (!header) throw Boom.unauthorized('missing bearer token', 'Bearer');
      const match = BEARER.exec(String(header).trim());
      if (!match) throw Boom.unauthorized('malformed authorization header: expected Bearer <token>', 'Bearer');
      try {
        return h.authenticated({ credentials: { principal: await tokens.authenticate(match[1]) } });
      } catch (e) {
        if (e instanceof TokenRejected) throw Boom.unauthorized(e.message, 'Bearer');
        throw e;
      }
    },
  }));
  server.auth.strategy('bearer', 'svc-bearer');
  server.auth.default('bearer');
}
