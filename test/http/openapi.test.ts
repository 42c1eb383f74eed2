import test from 'ava';
import SwaggerParser from '@apidevtools/swagger-parser';
import YAML from 'yaml';
import { openApiPath } from '../../core/http/openapi.ts';
import { call, startTestServer, type TestServer } from '../support/server.ts';

let s: TestServer;
/** The document, read once for the tests that only read it (building it takes seconds). */
let doc: any;
test.before(async () => {
  s = await startTestServer();
  const res = await call(s.server, 'GET', '/openapi.json');
  if (res.statusCode !== 200) throw new Error(`/openapi.json answered ${res.statusCode}`);
  doc = res.body;
});
test.after.always(async () => {
  await s?.stop();
});

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

test('/openapi.json is a valid OpenAPI 3 document', async (t) => {
  t.regex(doc.openapi, /^3\./);
  await t.notThrowsAsync(SwaggerParser.validate(structuredClone(doc)));
});

test('every operation has a description, a domain tag and a success response schema', async (t) => {
  const problems: string[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const where = `${method.toUpperCase()} ${path}`;
      if (!op.description && !op.summary) problems.push(`${where}: no description`);
      if (!op.tags?.length) problems.push(`${where}: no tag`);
      const success = Object.entries<any>(op.responses ?? {}).filter(([code]) => /^2/.test(code));
      if (!success.length) problems.push(`${where}: no success response`);
      for (const [code, response] of success) {
        // JSON, or the one media type the route produces (GET /metrics: Prometheus text)
        if (code !== '204' && !Object.values<any>(response.content ?? {}).some((media) => media.schema)) problems.push(`${where}: ${code} has no schema`);
      }
    }
  }
  t.deepEqual(problems, []);
});

test('the document covers the kernel routes with their spec paths', async (t) => {
  for (const path of [
    '/health',
    '/auth/config',
    '/.well-known/jwks.json',
    '/auth/challenge',
    '/auth/verify',
    '/auth/mint',
    '/auth/bootstrap',
    '/auth/bootstrap/status',
    '/orgs',
    '/orgs/ensure',
    '/orgs/{org_id}',
    '/orgs/{org_id}/members',
    '/projects',
    '/projects/ensure',
    '/projects/{project_id}',
    '/projects/{project_id}/members',
  ]) {
    t.truthy(doc.paths[path], path);
  }
  t.truthy(doc.components.securitySchemes.bearer);
});

test('/openapi.yaml is the same document in YAML, and /docs serves the interactive docs', async (t) => {
  const yaml = await s.server.inject('/openapi.yaml');
  t.is(yaml.statusCode, 200);
  t.regex(String(yaml.headers['content-type']), /yaml/);
  t.deepEqual(YAML.parse(yaml.payload), doc);
  const docs = await s.server.inject('/docs');
  t.is(docs.statusCode, 200);
  t.regex(docs.payload, /<html/i);
});

/** The operations no bearer token reaches: sign-in, discovery, probes, and the inbound webhooks signed by their senders. */
const PUBLIC_OPERATIONS = [
  'bootstrapAdministrator',
  'createRegistryGrant',
  'exchangeIdentityToken',
  'finishNostrLogin',
  'finishSshLogin',
  'getAccessRequestStatus',
  'getAppAuthConfig',
  'getAuthConfig',
  'getBootstrapStatus',
  'getHealth',
  'getInferenceGateway',
  'getJwks',
  'getLiveness',
  'getMetrics',
  'getOpenApiYaml',
  'getRegistryToken',
  'passwordLogin',
  'probeSignOnSession',
  'receiveChatAppEvent',
  'receiveChatAppEventLegacy',
  'receiveVcsHostEvent',
  'requestAccess',
  'requestMagicLink',
  'signInConsole',
  'signOutConsole',
  'startNostrLogin',
  'startSshLogin',
  'verifyMagicLink',
];

/** The documented routes of the server, each with its operation in the document. */
function documented() {
  return s.server
    .table()
    .filter((route) => route.settings.tags?.includes('api'))
    .map((route) => ({ route, operation: doc.paths[openApiPath(route.path)]?.[route.method] }));
}

test("every documented route names its operation in options.id (else hapi-swagger makes one from the path: getWellknownJwksjson): unique, camelCase, the document's operationId", async (t) => {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const { route, operation } of documented()) {
    const where = `${route.method.toUpperCase()} ${route.path}`;
    const id = route.settings.id;
    if (!id) problems.push(`${where}: no options.id`);
    else if (!/^[a-z][a-zA-Z0-9]*$/.test(id)) problems.push(`${where}: id ${id} is not camelCase`);
    if (id && seen.has(id)) problems.push(`${where}: id ${id} taken`);
    seen.add(id ?? '');
    if (!operation) problems.push(`${where}: not in the document`);
    else if (operation.operationId !== id) problems.push(`${where}: operationId ${operation.operationId}, id ${id}`);
  }
  t.deepEqual(problems, []);
});

test('each operation declares the security its route enforces: none where hapi authenticates nothing, the bearer token elsewhere', async (t) => {
  t.is(doc.security, undefined, 'no global requirement');
  t.deepEqual(doc.components.securitySchemes, { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } });
  const problems: string[] = [];
  const publicOnes: string[] = [];
  for (const { route, operation } of documented()) {
    const where = `${operation.operationId} (${route.method.toUpperCase()} ${route.path})`;
    const open = (route.settings.auth as unknown) === false;
    if (open) publicOnes.push(operation.operationId);
    t.deepEqual(operation.security, open ? [] : [{ bearer: [] }], where);
    if (open) continue;
    // and hapi does refuse it without a token
    const url = route.path.replace(/\{(\w+)\*?\d*\??\}/g, (_m, name) => `x-${name}`);
    const res = await s.server.inject({ method: route.method, url });
    if (res.statusCode !== 401) problems.push(`${where}: ${res.statusCode} without a token`);
  }
  t.deepEqual(problems, []);
  t.deepEqual(publicOnes.sort(), PUBLIC_OPERATIONS, 'a route made public (or no longer public) is a change to this list');
});

test('schemas are named after what they are: joi labels only, no Model<n>, no x-alt-definitions, one shape per name', async (t) => {
  t.false('x-alt-definitions' in doc);
  const names = Object.keys(doc.components.schemas);
  t.deepEqual(
    names.filter((name) => !/^[A-Z][A-Za-z0-9]*$/.test(name) || /^Model\d+$/.test(name)),
    [],
  );
  // hapi-swagger names a second shape under a taken label Label1, the normalizer Label2: two joi schemas share a label
  t.deepEqual(
    names.filter((name) => /\D\d+$/.test(name) && names.includes(name.replace(/\d+$/, ''))),
    [],
    'a label names two different schemas: give one of them another label',
  );
  const refs = JSON.stringify(doc).match(/"\$ref":"[^"]*"/g) ?? [];
  t.deepEqual(
    refs.filter((ref) => !names.includes(ref.slice('"$ref":"#/components/schemas/'.length, -1))),
    [],
  );
});

test('every JSON request body and response refers to a named schema', async (t) => {
  const problems: string[] = [];
  const named = (schema: any): boolean =>
    Boolean(schema?.$ref) ||
    (schema?.allOf?.length === 1 && Boolean(schema.allOf[0].$ref)) || // a nullable use of one
    (Array.isArray(schema?.anyOf) && schema.anyOf.every((s: any) => s.$ref || s.type === 'string')) ||
    (schema?.type !== undefined && schema.type !== 'object' && schema.type !== 'array');
  for (const { operation } of documented()) {
    const where = operation.operationId;
    for (const [type, media] of Object.entries<any>(operation.requestBody?.content ?? {})) if (!named(media.schema)) problems.push(`${where} body ${type}`);
    for (const [code, response] of Object.entries<any>(operation.responses)) {
      for (const [type, media] of Object.entries<any>(response.content ?? {})) if (!named(media.schema)) problems.push(`${where} ${code} ${type}`);
    }
  }
  t.deepEqual(problems, []);
});

test('every tag an operation uses is described', async (t) => {
  const used = new Set<string>();
  for (const item of Object.values<any>(doc.paths)) for (const op of Object.values<any>(item)) for (const tag of op.tags ?? []) used.add(tag);
  t.deepEqual(doc.tags.map((tag: { name: string }) => tag.name).sort(), [...used].sort());
  t.deepEqual(
    doc.tags.filter((tag: { description?: string }) => !tag.description || tag.description.length < 30).map((tag: { name: string }) => tag.name),
    [],
  );
});
