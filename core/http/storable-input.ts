import Boom from '@hapi/boom';
import type { Server } from '@hapi/hapi';
import { describeUnstorable, findUnstorable } from '../db/storable.ts';

/**
 * Every route, in one place: a request whose path parameters, query or parsed payload hold what
 * PostgreSQL or V8 cannot store (NUL, lone surrogates, JSON nested more than MAX_JSON_DEPTH levels;
 * core/db/storable.ts) is refused with 400 naming the field, before any validation or handler runs.
 * It runs after authentication (a stranger learns nothing), and before joi, so no schema ever walks
 * a hostile depth. Raw payloads (Buffers, streams) are bytes, not text, and are left to their routes.
 */
export function installStorableInputCheck(server: Server): void {
  server.ext('onPostAuth', (request, h) => {
    const found =
      named(findUnstorable(request.params ?? {}), 'path parameter') ??
      named(findUnstorable(request.query ?? {}), 'query parameter') ??
      describeOrNull(findUnstorable(request.payload, ''), 'the request body');
    if (found) throw Boom.badRequest(found);
    return h.continue;
  });
}

function named(u: ReturnType<typeof findUnstorable>, kind: string): string | null {
  return u ? `${kind} ${describeUnstorable(u)}` : null;
}

function describeOrNull(u: ReturnType<typeof findUnstorable>, what: string): string | null {
  return u ? describeUnstorable(u, what) : null;
}
