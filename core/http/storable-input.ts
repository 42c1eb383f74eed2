import Boom from '@hapi/boom';
import type { Request, Server } from '@hapi/hapi';
import { describeUnstorable, findUnstorable, type Unstorable } from '../db/storable.ts';
import { parseLimits } from '../parse-limits.ts';
import { installBodyDepthCheck } from './body-depth.ts';

/**
 * Every route, in one place: a request whose path parameters, query or payload hold what PostgreSQL
 * or V8 cannot store (core/db/storable.ts) is refused with 400 naming the field. Two steps:
 * - nesting deeper than MAX_JSON_DEPTH, right after authentication and before joi, so no schema
 *   ever walks a hostile depth;
 * - NUL characters and lone surrogates once joi has run (its own message wins where a schema
 *   already refuses them) and before the access check, so this stays a validation error (400 before
 *   403/404). Install it before installAccessCheck.
 * Raw payloads (Buffers, streams) are bytes and are left alone, as are the payload fields a route
 * lists in `plugins.svc.bytes` (stored as bytes, not text).
 * A JSON body nested too deeply is refused even before hapi parses it (body-depth.ts).
 */
export function installStorableInputCheck(server: Server): void {
  installBodyDepthCheck(server, parseLimits().max_depth);
  server.ext('onPostAuth', (request, h) => {
    refuse(request, 'depth');
    return h.continue;
  });
  server.ext('onPreHandler', (request, h) => {
    refuse(request);
    return h.continue;
  });
}

function refuse(request: Request, only?: 'depth'): void {
  const found =
    named(findUnstorable(request.params ?? {}, '', only), 'path parameter') ??
    named(findUnstorable(request.query ?? {}, '', only), 'query parameter') ??
    describeOrNull(findUnstorable(textPayload(request), '', only), 'the request body');
  if (found) throw Boom.badRequest(found);
}

/** The payload without the fields the route stores as bytes. */
function textPayload(request: Request): unknown {
  const bytes = request.route.settings.plugins?.svc?.bytes;
  const payload = request.payload;
  if (!bytes?.length || typeof payload !== 'object' || payload === null || Array.isArray(payload)) return payload;
  return Object.fromEntries(Object.entries(payload).filter(([key]) => !bytes.includes(key)));
}

function named(u: Unstorable | null, kind: string): string | null {
  return u ? `${kind} ${describeUnstorable(u)}` : null;
}

function describeOrNull(u: Unstorable | null, what: string): string | null {
  return u ? describeUnstorable(u, what) : null;
}
