import type { Plugin, RequestRoute, Server } from '@hapi/hapi';
import Boom from '@hapi/boom';
import HapiSwagger from 'hapi-swagger';
import { isObject } from '../is-object.ts';
import { VERSION } from '../version.ts';
import { normalizeSchemas } from './openapi-schemas.ts';

/**
 * The OpenAPI document (`/openapi.json`, `/openapi.yaml`, `/docs`): hapi-swagger builds it from the
 * routes' joi schemas, then `normalizeDocument` makes it the published contract (docs/openapi.md):
 * schemas named by their labels, each operation's id and security from its route (`options.id`,
 * `options.auth`), tags described by the plugins that own them, path templates OpenAPI can express.
 */

export const OPENAPI_PATH = '/openapi.json';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

declare module '@hapi/hapi' {
  interface ServerApplicationState {
    /** Tag name → description, from describeTags. */
    openApiTags?: Map<string, string>;
  }
}

/** Describe the tags a plugin's routes use (once per tag: a second, different description fails the boot). */
export function describeTags(server: Server, tags: Record<string, string>): void {
  const known = (server.app.openApiTags ??= new Map());
  for (const [name, description] of Object.entries(tags)) {
    const before = known.get(name);
    if (before !== undefined && before !== description) throw new Error(`OpenAPI tag '${name}' is described twice, differently`);
    known.set(name, description);
  }
}

/** The authentication hapi applies to a route (its own, else the server default; false: none), as `server.auth.lookup` answers. */
export function authOf(server: Server, route: RequestRoute): { strategies?: string[]; mode?: string } | false {
  const own = route.settings.auth as unknown;
  if (own === false) return false;
  return (
    (own as { strategies?: string[]; mode?: string } | undefined) ??
    (server.auth.settings.default as { strategies?: string[]; mode?: string } | undefined) ??
    false
  );
}

/** The security requirement of a route as hapi enforces it: none, or one of its strategies (the bearer scheme, core/auth/scheme.ts). */
export function securityOf(server: Server, route: RequestRoute): Record<string, string[]>[] {
  const auth = authOf(server, route);
  if (!auth) return [];
  const required = (auth.strategies ?? []).map((strategy) => ({ [strategy]: [] as string[] }));
  return auth.mode === 'optional' || auth.mode === 'try' ? [...required, {}] : required;
}

/** `{name*}` and `{name*2}` (hapi's multi-segment parameters) as OpenAPI writes a parameter: `{name}`. */
export const openApiPath = (hapiPath: string): string => hapiPath.replace(/\{(\w+)(\*\d*|\?)\}/g, '{$1}');

type Operation = Record<string, unknown> & { parameters?: Record<string, unknown>[]; tags?: string[] };

/** A summary longer than this is cut at its first clause, the whole kept as the description. */
const SUMMARY_MAX = 80;

/**
 * The summary and description of an operation from the route's description and notes: a long
 * description becomes its first clause (up to `; `, `: `, ` (` or `. `) as the summary, and the whole,
 * then the notes, as the description.
 */
export function summarize(text: string, notes?: string): { summary: string; description?: string } {
  let summary = text;
  if (text.length > SUMMARY_MAX) {
    const cut = Math.min(...['; ', ': ', ' (', '. '].map((mark) => text.indexOf(mark, 8)).filter((at) => at > 0 && at <= SUMMARY_MAX));
    if (Number.isFinite(cut)) summary = text.slice(0, cut);
  }
  const description = [summary === text ? null : text, notes].filter(Boolean).join('\n\n');
  return description ? { summary, description } : { summary };
}

/** One operation from its route: id, security, summary, a required body, a declaration for each path parameter. */
function normalizeOperation(server: Server, route: RequestRoute | undefined, path: string, operation: Operation): Operation {
  const { summary, description, ...out }: Operation = { ...operation };
  if (typeof summary === 'string') Object.assign(out, summarize(summary, typeof description === 'string' ? description : undefined));
  // hapi validates an absent body as null: one the schema does not allow is required (schemas are normalized first: a nullable one says so here).
  const body = out.requestBody as { content?: Record<string, { schema?: Record<string, unknown> }> } | undefined;
  if (body?.content && Object.values(body.content).every((media) => media.schema?.nullable !== true)) out.requestBody = { required: true, ...body };
  if (route?.settings.id) out.operationId = route.settings.id;
  if (route) out.security = securityOf(server, route);
  const declared = new Set((out.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name));
  for (const [, name] of path.matchAll(/\{(\w+)\}/g)) {
    if (declared.has(name)) continue;
    const multi = route && new RegExp(`\\{${name}\\*`).test(route.path);
    out.parameters = [
      ...(out.parameters ?? []),
      { name, in: 'path', required: true, schema: { type: 'string' }, ...(multi ? { description: 'may contain "/"' } : {}) },
    ];
  }
  return out;
}

/** hapi-swagger's document made the published one (see above). `routes` are the server's (server.table()). */
export function normalizeDocument(server: Server, hapiDocument: Record<string, unknown>): Record<string, unknown> {
  const { security: _global, ...document } = normalizeSchemas(hapiDocument);
  const byOperation = new Map<string, RequestRoute>();
  for (const route of server.table()) byOperation.set(`${route.method} ${openApiPath(route.path)}`, route);
  const paths: Record<string, Record<string, unknown>> = {};
  const used = new Set<string>();
  for (const [hapiPath, item] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
    const path = openApiPath(hapiPath);
    paths[path] = {};
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.includes(method) || !isObject(operation)) {
        paths[path][method] = operation;
        continue;
      }
      const normalized = normalizeOperation(server, byOperation.get(`${method} ${path}`), path, operation);
      for (const tag of normalized.tags ?? []) used.add(tag);
      paths[path][method] = normalized;
    }
  }
  const described = server.app.openApiTags ?? new Map<string, string>();
  const tags = [...used].sort().map((name) => (described.has(name) ? { name, description: described.get(name) } : { name }));
  return { ...document, tags, paths };
}

/** hapi-swagger, serving the normalized document. */
export async function installOpenApi(server: Server): Promise<void> {
  await server.register({
    plugin: HapiSwagger as unknown as Plugin<unknown>,
    options: {
      OAS: 'v3.0',
      info: {
        title: 'svc API',
        version: VERSION,
        description: 'Runs AI coding agents on real repositories as tracked jobs.',
        // package.json's license: no rights granted (npm's UNLICENSED)
        license: { name: 'UNLICENSED', url: 'https://docs.npmjs.com/cli/v10/configuring-npm/package-json#license' },
      },
      jsonPath: OPENAPI_PATH,
      jsonRoutePath: OPENAPI_PATH,
      documentationPath: '/docs',
      grouping: 'tags',
      validatorUrl: null,
      // Two schemas under one label are named `Label1`, `Label2` (which the document test refuses), not `Model<n>`.
      definitionPrefix: 'useLabel',
      securityDefinitions: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    },
  });
  server.ext('onPostHandler', (request, h) => {
    const response = request.response;
    if (request.route.path !== OPENAPI_PATH || request.route.realm.plugin !== 'hapi-swagger' || Boom.isBoom(response)) return h.continue;
    return h.response(normalizeDocument(request.server, response.source as Record<string, unknown>));
  });
}
