import test from 'ava';
import Hapi from '@hapi/hapi';
import Inert from '@hapi/inert';
import Vision from '@hapi/vision';
import Joi from 'joi';
import { describeTags, installOpenApi, openApiPath, summarize } from '../../core/http/openapi.ts';
import { isLabelName, normalizeSchemas, qualifyNullable } from '../../core/http/openapi-schemas.ts';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const alt = (name: string) => ({ $ref: `#/x-alt-definitions/${name}` });
const doc = (schemas: Record<string, unknown>, paths: Record<string, unknown> = {}, alternatives?: Record<string, unknown>) => ({
  openapi: '3.0.0',
  paths,
  components: { schemas, securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
  ...(alternatives ? { 'x-alt-definitions': alternatives } : {}),
});
/** normalizeSchemas on a hand-written document, its result read loosely. */
const normalize = (document: unknown): any => normalizeSchemas(document as Parameters<typeof normalizeSchemas>[0]);
const body = (schema: unknown) => ({ '/x': { post: { requestBody: { content: { 'application/json': { schema } } }, responses: {} } } });

test('labels are names; keys and Model<n> are not', (t) => {
  for (const name of ['Job', 'JobList', 'CreateJobRequest', 'JWKS']) t.true(isLabelName(name), name);
  for (const name of ['data', 'status', 'max_cost', 'systemInstruction', 'Model1', 'Model216']) t.false(isLabelName(name), name);
});

test('a schema named by its key or Model<n> is written where it is used; labelled ones stay components', (t) => {
  const out = normalize(
    doc(
      {
        Job: { type: 'object', properties: { git: ref('git'), tags: ref('tags') } },
        git: { type: 'object', properties: { ref: { type: 'string' } } },
        tags: { type: 'array', items: { type: 'string' } },
        data: { type: 'array', items: ref('Job') },
        Model7: { type: 'object', properties: { data: ref('data') } },
      },
      body(ref('Model7')),
    ),
  );
  t.deepEqual(Object.keys(out.components.schemas), ['Job']);
  t.deepEqual(out.components.schemas.Job, {
    type: 'object',
    properties: { git: { type: 'object', properties: { ref: { type: 'string' } } }, tags: { type: 'array', items: { type: 'string' } } },
  });
  t.deepEqual((out.paths['/x'] as any).post.requestBody.content['application/json'].schema, {
    type: 'object',
    properties: { data: { type: 'array', items: ref('Job') } },
  });
  t.deepEqual(out.components.securitySchemes, { bearer: { type: 'http', scheme: 'bearer' } }, 'the other components stay');
});

test('x-alt-definitions join the components: one schema for a twin, a new component for a new label, inline for the rest', (t) => {
  const page = { type: 'object', properties: { pagination: alt('Pagination'), data: alt('data') } };
  const out = normalize(
    doc(
      { Pagination: { type: 'object', properties: { total: { type: 'integer' } } }, Spec: { type: 'object', properties: { registry: alt('registry') } } },
      body({ anyOf: [alt('LogPage'), { type: 'string' }] }),
      {
        Pagination: { type: 'object', properties: { total: { type: 'integer' } } },
        data: { type: 'array', items: alt('LogLine') },
        LogLine: { type: 'object', properties: { line: { type: 'string' } } },
        LogPage: page,
        registry: { anyOf: [{ type: 'string' }, alt('Model3')] },
        Model3: { type: 'object', properties: { host: { type: 'string' } } },
      },
    ),
  );
  t.false('x-alt-definitions' in out);
  t.deepEqual(Object.keys(out.components.schemas), ['LogLine', 'LogPage', 'Pagination', 'Spec']);
  t.deepEqual(out.components.schemas.LogPage, {
    type: 'object',
    properties: { pagination: ref('Pagination'), data: { type: 'array', items: ref('LogLine') } },
  });
  t.deepEqual(out.components.schemas.Spec, {
    type: 'object',
    properties: { registry: { anyOf: [{ type: 'string' }, { type: 'object', properties: { host: { type: 'string' } } }] } },
  });
  t.notRegex(JSON.stringify(out), /x-alt-definitions/);
});

test('one label used nullable or with its own description is one component; the use says so beside its reference', (t) => {
  const job = { type: 'object', properties: { id: { type: 'string' } } };
  const out = normalize(
    doc({
      Job: job,
      // hapi-swagger: a second shape under the label Job (definitionPrefix useLabel)
      Job1: { ...job, nullable: true, description: 'null for a root job' },
      Context: { type: 'object', properties: { job: ref('Job'), parent: ref('Job1') } },
    }),
  );
  t.deepEqual(Object.keys(out.components.schemas), ['Context', 'Job']);
  t.deepEqual(out.components.schemas.Context.properties, {
    job: ref('Job'),
    parent: { description: 'null for a root job', type: 'object', nullable: true, allOf: [ref('Job')] },
  });
});

test('two different shapes under one label stay apart, the second numbered so the document test finds it', (t) => {
  const out = normalize(
    doc({
      SecretList: { type: 'object', properties: { data: { type: 'array' } } },
      SecretList1: { type: 'object', properties: { items: { type: 'array' } } },
      Both: { type: 'object', properties: { a: ref('SecretList'), b: ref('SecretList1') } },
    }),
  );
  t.deepEqual(Object.keys(out.components.schemas), ['Both', 'SecretList', 'SecretList2']);
  t.deepEqual(out.components.schemas.Both.properties, { a: ref('SecretList'), b: ref('SecretList2') });
});

test('a reference to nothing, or a loop through unlabelled schemas, is an error naming it', (t) => {
  t.throws(() => normalize(doc({ A: { type: 'object', properties: { b: ref('Gone') } } })), {
    message: /#\/components\/schemas\/Gone is referred to but not defined/,
  });
  t.throws(() => normalize(doc({ A: { type: 'object', properties: { b: ref('b') } }, b: { type: 'object', properties: { a: ref('b') } } })), {
    message: /refers to itself/,
  });
});

test('nullable beside anyOf moves onto the alternatives that have a type, or adds a null one', (t) => {
  t.deepEqual(qualifyNullable({ nullable: true, description: 'd', anyOf: [{ type: 'string' }, ref('A')] }), {
    description: 'd',
    anyOf: [{ type: 'string', nullable: true }, ref('A')],
  });
  t.deepEqual(qualifyNullable({ nullable: true, anyOf: [ref('A')] }), { anyOf: [ref('A'), { type: 'string', nullable: true, enum: [null] }] });
  t.deepEqual(qualifyNullable({ type: 'string', nullable: true }), { type: 'string', nullable: true });
});

test('a long route description: its first clause is the summary, the whole (and the notes) the description', (t) => {
  t.deepEqual(summarize('One job'), { summary: 'One job' });
  t.deepEqual(summarize('One job', 'more'), { summary: 'One job', description: 'more' });
  const long = 'Create a job (only description is required); manifest defaults merge under the given fields and more words';
  t.deepEqual(summarize(long), { summary: 'Create a job', description: long });
  t.deepEqual(summarize(`Claim a ready job: ${'x'.repeat(90)}`, 'notes'), {
    summary: 'Claim a ready job',
    description: `Claim a ready job: ${'x'.repeat(90)}\n\nnotes`,
  });
  const uncut = 'a'.repeat(100);
  t.deepEqual(summarize(uncut), { summary: uncut });
});

test("hapi's multi-segment and optional parameters are written as OpenAPI's", (t) => {
  t.is(openApiPath('/inference/managed-models/{canonical_model_id*}'), '/inference/managed-models/{canonical_model_id}');
  t.is(openApiPath('/a/{p*2}/{q?}'), '/a/{p}/{q}');
  t.is(openApiPath('/orgs/{org_id}'), '/orgs/{org_id}');
});

test('served: hapi-swagger output for real joi schemas becomes the normalized document, with ids, security and tags from the routes', async (t) => {
  const server = Hapi.server();
  await server.register([Inert, Vision]);
  await installOpenApi(server);
  server.auth.scheme('test', () => ({ authenticate: (_r, h) => h.authenticated({ credentials: {} }) }));
  server.auth.strategy('bearer', 'test');
  server.auth.default('bearer');
  describeTags(server, { things: 'Things, for the test' });
  const thing = Joi.object({ id: Joi.string().required(), meta: Joi.object({ color: Joi.string() }) }).label('Thing');
  server.route([
    {
      method: 'POST',
      path: '/things',
      options: {
        id: 'createThing',
        tags: ['api', 'things'],
        description: 'Create a thing',
        validate: { payload: Joi.object({ name: Joi.string(), shape: Joi.alternatives(Joi.object({ sides: Joi.number() }).label('Polygon'), Joi.string()) }) },
        response: { schema: thing },
      },
      handler: () => ({ id: 'a' }),
    },
    {
      method: 'GET',
      path: '/things/{path*}',
      options: {
        auth: false,
        tags: ['api', 'things'],
        description: 'A thing by path',
        response: { schema: Joi.object({ thing: thing.allow(null), parent: thing.allow(null).description('none at the top') }).label('ThingView') },
      },
      handler: () => ({ thing: null, parent: null }),
    },
  ]);
  const res = await server.inject('/openapi.json');
  t.is(res.statusCode, 200);
  const out = JSON.parse(res.payload);
  t.false('x-alt-definitions' in out);
  t.is(out.security, undefined);
  t.deepEqual(out.tags, [{ name: 'things', description: 'Things, for the test' }]);
  t.deepEqual(Object.keys(out.components.schemas), ['Polygon', 'Thing', 'ThingView']);
  const create = out.paths['/things'].post;
  t.is(create.operationId, 'createThing');
  t.deepEqual(create.security, [{ bearer: [] }]);
  t.true(create.requestBody.required);
  t.deepEqual(create.requestBody.content['application/json'].schema.properties.shape.anyOf, [ref('Polygon'), { type: 'string' }]);
  const get = out.paths['/things/{path}'].get;
  t.deepEqual(get.security, []);
  t.is(get.operationId, 'getThingsPath', 'without options.id, the id hapi-swagger made');
  t.deepEqual(get.parameters, [{ name: 'path', in: 'path', required: true, schema: { type: 'string' }, description: 'may contain "/"' }]);
  t.deepEqual(out.components.schemas.ThingView.properties.parent, { description: 'none at the top', type: 'object', nullable: true, allOf: [ref('Thing')] });
  t.is(out.components.schemas.Thing.nullable, undefined);
});
