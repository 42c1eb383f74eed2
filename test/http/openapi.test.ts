import test from 'ava';
import SwaggerParser from '@apidevtools/swagger-parser';
import YAML from 'yaml';
import { call, startTestServer, type TestServer } from '../support/server.ts';

let s: TestServer;
test.before(async () => {
  s = await startTestServer();
});
test.after.always(async () => {
  await s?.stop();
});

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

test('/openapi.json is a valid OpenAPI 3 document', async (t) => {
  const res = await call(s.server, 'GET', '/openapi.json');
  t.is(res.statusCode, 200);
  t.regex(res.body.openapi, /^3\./);
  await t.notThrowsAsync(SwaggerParser.validate(structuredClone(res.body)));
});

test('every operation has a description, a domain tag and a success response schema', async (t) => {
  const doc = (await call(s.server, 'GET', '/openapi.json')).body;
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
  const doc = (await call(s.server, 'GET', '/openapi.json')).body;
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
  const json = (await call(s.server, 'GET', '/openapi.json')).body;
  const yaml = await s.server.inject('/openapi.yaml');
  t.is(yaml.statusCode, 200);
  t.regex(String(yaml.headers['content-type']), /yaml/);
  t.deepEqual(YAML.parse(yaml.payload), json);
  const docs = await s.server.inject('/docs');
  t.is(docs.statusCode, 200);
  t.regex(docs.payload, /<html/i);
});
