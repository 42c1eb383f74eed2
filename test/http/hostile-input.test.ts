import test from 'ava';
import { as, bootstrapAdmin, call, startTestServer, type TestServer } from '../support/server.ts';

/**
 * Input PostgreSQL or V8 cannot store (NUL characters, lone surrogates, JSON nested thousands of
 * levels deep) is refused at the HTTP edge, for every route, with 400 naming the field, and nothing
 * is written. Before, each of these answered 500.
 */
let s: TestServer;
let admin: ReturnType<typeof as>;
let token = '';
let orgId = '';
let projectId = '';

test.before(async () => {
  s = await startTestServer();
  token = (await bootstrapAdmin(s.server)).token;
  admin = as(s.server, token);
  orgId = (await admin.post('/orgs', { name: 'Edge' })).body.id;
  projectId = (await admin.post('/projects', { org_id: orgId, name: 'Edge', slug: 'edge' })).body.id;
});
test.after.always(async () => {
  await s?.stop();
});

function nested(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

/** Raw JSON text, so lone surrogates and deep nesting reach the server exactly as a hostile client sends them. */
const raw = (method: string, url: string, json: string) =>
  s.server.inject({ method, url, payload: json, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } });

const counts = async () => {
  const n = async (table: string) => Number((await s.kernel.db(table).count({ n: '*' }).first())!.n);
  return { jobs: await n('jobs'), events: await n('events'), orgs: await n('orgs'), docs: await n('org_docs') };
};

const CASES: [string, string, () => string, RegExp][] = [
  ['NUL in a job description', 'POST /projects/{p}/jobs', () => '{"description":"fix\\u0000it"}', /^description contains a NUL character/],
  ['lone surrogate in a job description', 'POST /projects/{p}/jobs', () => '{"description":"fix \\ud800 it"}', /^description contains a lone UTF-16 surrogate/],
  ['NUL in a hint', 'POST /projects/{p}/jobs', () => '{"description":"x","hints":{"x-note":"a\\u0000"}}', /^hints\.x-note contains a NUL character/],
  [
    'hints nested 10,000 deep',
    'POST /projects/{p}/jobs',
    () => `{"description":"x","hints":${nested(10_000)}}`,
    /^hints\.a\.a.* is nested more than 64 levels deep/,
  ],
  [
    'hints nested 1,000 deep (a body small enough to be checked after parsing, not scanned)',
    'POST /projects/{p}/jobs',
    () => `{"description":"x","hints":${nested(1_000)}}`,
    /^hints\.a\.a.* is nested more than 64 levels deep/,
  ],
  [
    'hints nested 150,000 deep (near the 1 MB body limit)',
    'POST /projects/{p}/jobs',
    () => `{"description":"x","hints":${nested(150_000)}}`,
    /nested more than 64 levels deep|Invalid request payload JSON/,
  ],
  ['NUL in an event payload', 'POST /projects/{p}/events', () => '{"type":"manual.x","payload":{"k":"\\u0000"}}', /^payload\.k contains a NUL character/],
  [
    'lone surrogate in an event payload key',
    'POST /projects/{p}/events',
    () => '{"type":"manual.x","payload":{"\\udc00":1}}',
    /^payload\.\\udc00 has a key that contains a lone UTF-16 surrogate/,
  ],
  [
    'event payload nested 10,000 deep',
    'POST /projects/{p}/events',
    () => `{"type":"manual.x","payload":${nested(10_000)}}`,
    /^payload\.a\.a.* is nested more than 64 levels deep/,
  ],
  ['NUL in an org name', 'POST /orgs', () => '{"name":"Acme\\u0000"}', /^name contains a NUL character/],
  ['lone surrogate in an org name', 'POST /orgs', () => '{"name":"Acme \\ud83d"}', /^name contains a lone UTF-16 surrogate/],
  ['NUL in an org doc', 'POST /orgs/{o}/docs', () => '{"path":"/guides/a.md","content":"a\\u0000b"}', /^content contains a NUL character/],
  ['lone surrogate in an org doc', 'POST /orgs/{o}/docs', () => '{"path":"/guides/a.md","content":"\\udfff"}', /^content contains a lone UTF-16 surrogate/],
];

for (const [what, route, body, message] of CASES) {
  test.serial(`${what} (${route}): 400 naming the field, nothing written`, async (t) => {
    const [method, path] = route.split(' ');
    const url = path.replace('{p}', projectId).replace('{o}', orgId);
    const before = await counts();
    const res = await raw(method, url, body());
    t.is(res.statusCode, 400, res.payload.slice(0, 300));
    const parsed = JSON.parse(res.payload);
    t.is(parsed.error, 'Bad Request');
    t.regex(parsed.message, message);
    t.deepEqual(await counts(), before);
  });
}

test.serial('NUL in a path or query parameter: 400 naming it', async (t) => {
  const byPath = await call(s.server, 'GET', `/orgs/org_%00`, undefined, token);
  t.is(byPath.statusCode, 400);
  t.regex(byPath.body.message, /org_id/, "joi's pattern refuses it first, naming the parameter");
  const byQuery = await call(s.server, 'GET', `/projects/${projectId}/jobs?label=a%00b`, undefined, token);
  t.is(byQuery.statusCode, 400);
  t.regex(byQuery.body.message, /^query parameter label contains a NUL character/);
});

test.serial('authentication still comes first: an anonymous hostile request is 401', async (t) => {
  const res = await s.server.inject({
    method: 'POST',
    url: `/projects/${projectId}/jobs`,
    payload: '{"description":"\\u0000"}',
    headers: { 'content-type': 'application/json' },
  });
  t.is(res.statusCode, 401);
});

test.serial('ordinary text passes: emoji (valid surrogate pairs), 64 levels of nesting', async (t) => {
  const ok = await raw('POST', `/projects/${projectId}/jobs`, `{"description":"ship it \\ud83d\\ude80","hints":{"x-deep":${nested(62)}}}`);
  t.is(ok.statusCode, 201, ok.payload.slice(0, 300));
  t.is(JSON.parse(ok.payload).description, 'ship it \u{1F680}');
});
