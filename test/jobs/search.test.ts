import test from 'ava';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { searchQuery } from '../../plugins/jobs/job/repository.ts';

/** Server-side job search: words of the title and description, harness, model and dates, combined with the older filters. */
let srv: TestServer;
let api: ReturnType<typeof as>;
let projectId: string;
let otherProjectId: string;
const ids: Record<string, string> = {};

test.before(async () => {
  srv = await startTestServer({ overrides: { roles: ['api'] } });
  api = as(srv.server, (await bootstrapAdmin(srv.server)).token);
  const org = (await api.post('/orgs', { name: 'Search' })).body;
  projectId = (await api.post('/projects', { org_id: org.id, name: 'Search', slug: 'search' })).body.id;
  otherProjectId = (await api.post('/projects', { org_id: org.id, name: 'Other', slug: 'othr' })).body.id;
  const create = async (key: string, body: Record<string, unknown>, project = projectId) => {
    const res = await api.post(`/projects/${project}/jobs`, body);
    if (res.statusCode !== 201) throw new Error(`${key}: ${JSON.stringify(res.body)}`);
    ids[key] = res.body.id;
  };
  await create('login', {
    title: 'Fix the login redirect',
    description: 'Users land on /home after signing in via app.ts',
    harness: 'harness_b',
    model: 'claude-x',
    labels: ['auth'],
  });
  await create('logout', { title: 'Logout button', description: 'Add a logout button to the header', harness: 'harness_d', model: 'gpt-y', labels: ['ui'] });
  await create('docs', { title: 'Write docs for the API', description: 'Reference pages', harness: 'harness_b', model: 'gpt-y' });
  await create('foreign', { title: 'Fix the login redirect elsewhere', description: 'Same words' }, otherProjectId);
});
test.after.always(() => srv?.stop());

const found = async (query: string) => {
  const res = await api.get(`/projects/${projectId}/jobs?${query}`);
  if (res.statusCode !== 200) throw new Error(`${query}: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return (res.body.data as { id: string }[]).map((j) => j.id).sort();
};
const of = (...keys: string[]) => keys.map((k) => ids[k]).sort();

test('words match the title or the description, as whole words or their start, all of them; never another project', async (t) => {
  t.deepEqual(await found('q=login'), of('login'));
  t.deepEqual(await found('q=log'), of('login', 'logout'));
  t.deepEqual(await found('q=LOGIN%20redirect'), of('login'));
  t.deepEqual(await found('q=signing'), of('login'), 'the description counts');
  t.deepEqual(await found('q=app.ts'), of('login'), 'a file name matches as written');
  t.deepEqual(await found('q=login%20docs'), [], 'every word must match');
  t.deepEqual(await found(`q=${encodeURIComponent("'); drop table jobs; -- & | ! :*")}`), [], 'tsquery syntax is only text');
});

test('harness, model, labels, dates and phase combine with the words', async (t) => {
  t.deepEqual(await found('harness=harness_b'), of('login', 'docs'));
  t.deepEqual(await found('model=gpt-y'), of('logout', 'docs'));
  t.deepEqual(await found('harness=harness_b&model=gpt-y'), of('docs'));
  t.deepEqual(await found('q=log&label=ui'), of('logout'));
  t.deepEqual(await found('created_after=2000-01-01T00:00:00Z&phase=ready&q=fix'), of('login'));
  t.deepEqual(await found(`created_before=2000-01-01T00:00:00Z`), []);
  t.deepEqual(await found('closed_after=2000-01-01T00:00:00Z'), [], 'nothing is closed yet');
  const page = await api.get(`/projects/${projectId}/jobs?q=log&limit=1`);
  t.like(page.body.pagination, { limit: 1, count: 1, total: 2, has_more: true });
});

test('bad filters are 400 naming the field', async (t) => {
  for (const [query, field] of [
    ['q=', 'q'],
    [`q=${'x'.repeat(201)}`, 'q'],
    ['created_after=yesterday', 'created_after'],
  ]) {
    const res = await api.get(`/projects/${projectId}/jobs?${query}`);
    t.is(res.statusCode, 400, query);
    t.regex(res.body.message, new RegExp(`"${field}"`));
  }
});

test('the query text becomes prefix words and nothing else', (t) => {
  t.is(searchQuery('Fix login'), 'fix:* & login:*');
  t.is(searchQuery('src/app.ts fix-login'), 'src/app.ts:* & fix-login:*');
  t.is(searchQuery("!&|():* '"), null);
});
