import test from 'ava';
import { ManifestDefaultsToken } from '../../core/ports/manifest.ts';
import { titleFrom, withDefaults } from '../../plugins/jobs/job/create.ts';
import { JobRepository } from '../../plugins/jobs/job/repository.ts';
import { as, bootstrapAdmin, startTestServer, userInOrg, type TestServer } from '../support/server.ts';

const manifestDefaults: Record<string, Record<string, unknown>> = {};
let s: TestServer;
let admin: ReturnType<typeof as>;
let adminToken = '';
let orgId = '';
let projectId = '';
let otherProjectId = '';
let memberToken = '';

test.before(async () => {
  s = await startTestServer({
    configure: (c) => c.registerInstance(ManifestDefaultsToken, { jobDefaults: async (id) => manifestDefaults[id] ?? {} }),
  });
  adminToken = (await bootstrapAdmin(s.server)).token;
  admin = as(s.server, adminToken);
  orgId = (await admin.post('/orgs', { name: 'Jobs Org' })).body.id;
  projectId = (await admin.post('/projects', { org_id: orgId, name: 'App', slug: 'jobapp' })).body.id;
  otherProjectId = (await admin.post('/projects', { org_id: orgId, name: 'Other', slug: 'other1' })).body.id;
  memberToken = await userInOrg(s.server, adminToken, orgId, 'member@example.com', 'member');
});
test.after.always(async () => {
  await s?.stop();
});

const jobs = (project = projectId) => `/projects/${project}/jobs`;
const countJobs = async () => Number((await s.kernel.db('jobs').count({ n: '*' }).first())!.n);

test('only description is required; the spec defaults apply', async (t) => {
  const res = await admin.post(jobs(), { description: 'Fix the login bug\n\nSteps: …' });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.regex(res.body.id, /^jobapp-[0-9a-f]{8}$/);
  t.like(res.body, {
    project_id: projectId,
    parent_id: null,
    depth: 0,
    title: 'Fix the login bug',
    issue_type: 'task',
    labels: [],
    phase: 'ready',
    priority: 2,
    assignee: null,
    review_required: 'none',
    review_status: null,
    execution_mode: 'persistent',
    git: null,
    resolved_git: null,
    closed_at: null,
    close_reason: null,
    hints: { permission_policy: 'yolo' },
  });
  t.deepEqual((await admin.get(`/jobs/${res.body.id}`)).body, res.body);
});

test('titles come from the first line, cut at a word', (t) => {
  t.is(titleFrom('  short line  \nrest'), 'short line');
  const long = titleFrom('word '.repeat(40));
  t.true(long.length <= 80);
  t.true(long.endsWith('…'));
  t.false(long.includes('wor…'), 'cut at a word boundary');
});

test.serial('children are {parent}.{n}, numbered per parent, at most three levels deep (422 beyond)', async (t) => {
  const root = (await admin.post(jobs(), { description: 'root' })).body;
  const first = await admin.post(jobs(), { description: 'a', parent_id: root.id });
  const second = await admin.post(jobs(), { description: 'b', parent_id: root.id });
  t.is(first.body.id, `${root.id}.1`);
  t.is(second.body.id, `${root.id}.2`);
  t.is(first.body.depth, 1);
  const grandchild = await admin.post(jobs(), { description: 'c', parent_id: first.body.id });
  t.is(grandchild.body.id, `${root.id}.1.1`);
  t.is(grandchild.body.depth, 2);
  const before = await countJobs();
  const tooDeep = await admin.post(jobs(), { description: 'd', parent_id: grandchild.body.id });
  t.is(tooDeep.statusCode, 422);
  t.is(tooDeep.body.message, `job ${grandchild.body.id} is at the deepest level: jobs nest at most 3 levels`);
  t.is(await countJobs(), before);
});

test('concurrent children get distinct numbers', async (t) => {
  const root = (await admin.post(jobs(), { description: 'busy parent' })).body;
  const made = await Promise.all(Array.from({ length: 8 }, (_, i) => admin.post(jobs(), { description: `c${i}`, parent_id: root.id })));
  t.deepEqual(
    made.map((r) => r.statusCode),
    Array(8).fill(201),
  );
  t.deepEqual(made.map((r) => r.body.id).sort(), Array.from({ length: 8 }, (_, i) => `${root.id}.${i + 1}`).sort());
});

test('concurrent root creations (one INSERT for many) each get their own fields and a distinct id', async (t) => {
  const bodies = Array.from({ length: 40 }, (_, i) => ({
    description: `batch ${i}\n\ndetails`,
    priority: i % 5,
    labels: [`l${i}`, 'batch'],
    hints: { max_attempts: 1 + (i % 3) },
    git: { branch: `b/${i}` },
    due_at: new Date(Date.UTC(2027, 0, 1 + (i % 28))).toISOString(),
    phase: i % 2 ? 'backlog' : 'ready',
  }));
  const made = await Promise.all(bodies.map((b) => admin.post(jobs(), b)));
  t.deepEqual(
    made.map((r) => r.statusCode),
    Array(40).fill(201),
  );
  t.is(new Set(made.map((r) => r.body.id)).size, 40);
  made.forEach((r, i) => {
    t.regex(r.body.id, /^jobapp-[0-9a-f]{8}$/);
    t.like(r.body, {
      title: `batch ${i}`,
      priority: i % 5,
      labels: [`l${i}`, 'batch'],
      phase: bodies[i].phase,
      git: { branch: `b/${i}` },
      due_at: bodies[i].due_at,
    });
    t.deepEqual(r.body.hints, { permission_policy: 'yolo', max_attempts: 1 + (i % 3) });
  });
  const stored = await Promise.all(made.map((r) => admin.get(`/jobs/${r.body.id}`)));
  t.deepEqual(
    stored.map((r) => r.body),
    made.map((r) => r.body),
  );
});

test.serial('a taken id is drawn again: the batch insert answers null for it and writes the others', async (t) => {
  const repo = s.kernel.container.resolve(JobRepository);
  const taken = (await admin.post(jobs(), { description: 'first' })).body.id as string;
  const suffix = taken.slice('jobapp-'.length);
  const row = {
    project_id: projectId,
    slug: 'jobapp',
    title: 't',
    description: 'd',
    issue_type: 'task',
    labels: [],
    phase: 'ready' as const,
    priority: 2,
    assignee: null,
    review_required: 'none',
    hints: {},
    git: null,
    workspace: null,
    env_name: null,
    execution_mode: 'persistent',
    harness: {},
    env_overrides: null,
    resource_refs: [],
    defer_until: null,
    due_at: null,
    created_by: null,
  };
  const before = await countJobs();
  const [clash, fresh] = await repo.insertRoots([
    { ...row, suffix },
    { ...row, suffix: 'feedf00d' },
  ]);
  t.is(clash, null);
  t.is(fresh!.id, 'jobapp-feedf00d');
  t.is(await countJobs(), before + 1);
  t.is((await admin.get(`/jobs/${taken}`)).body.title, 'first', 'the existing job is untouched');
});

test.serial('creating in a deleted project is 422 and writes nothing', async (t) => {
  const doomed = (await admin.post('/projects', { org_id: orgId, name: 'Doomed', slug: 'doomed' })).body.id;
  const parent = (await admin.post(jobs(doomed), { description: 'parent' })).body.id;
  t.is((await admin.delete(`/projects/${doomed}`)).statusCode, 204);
  const before = await countJobs();
  for (const body of [{ description: 'root' }, { description: 'child', parent_id: parent }]) {
    const res = await admin.post(jobs(doomed), body);
    t.is(res.statusCode, 422, JSON.stringify(res.body));
    t.is(res.body.message, `project ${doomed} is deleted`);
  }
  t.is(await countJobs(), before);
});

test.serial('a parent from another project is 422 and writes nothing', async (t) => {
  const foreign = (await admin.post(jobs(otherProjectId), { description: 'elsewhere' })).body;
  const before = await countJobs();
  const res = await admin.post(jobs(), { description: 'x', parent_id: foreign.id });
  t.is(res.statusCode, 422);
  t.is(res.body.message, `parent job ${foreign.id} is not a job of project ${projectId}`);
  t.is(await countJobs(), before);
});

test.serial('bad values are 400 naming the field, and nothing is written', async (t) => {
  const before = await countJobs();
  const cases: [Record<string, unknown>, RegExp][] = [
    [{}, /"description" is required/],
    [{ description: 'x', priority: 5 }, /"priority" must be less than or equal to 4/],
    [{ description: 'x', priority: -1 }, /"priority" must be greater than or equal to 0/],
    [{ description: 'x', issue_type: 'story' }, /"issue_type" must be one of/],
    [{ description: 'x', review_required: 'maybe' }, /"review_required" must be one of/],
    [{ description: 'x', execution_mode: 'forever' }, /"execution_mode" must be one of/],
    [{ description: 'x', hints: { permission_policy: 'sudo' } }, /"hints.permission_policy" must be one of/],
    [{ description: 'x', reasoning_effort: 'max' }, /"reasoning_effort" must be one of/],
    [{ description: 'x', defer_until: 'tomorrow' }, /"defer_until" must be in ISO 8601 date format/],
    [{ description: 'x', due_at: '2026-13-45' }, /"due_at" must be in ISO 8601 date format/],
    [{ description: 'x', git: { ref_policy: 'explicit' } }, /"git.ref" is required when "git.ref_policy" is explicit/],
    [{ description: 'x', harness: 'harness_z' }, /^harness: unknown harness 'harness_z' \(known: harness_a, .*coder/],
    [{ description: 'x', harness: 'Harness B' }, /"harness" with value "Harness B" fails to match/],
    [{ description: 'x', bogus: 1 }, /"bogus" is not allowed/],
    [{ description: 'x', parent_id: 'not a job' }, /"parent_id" with value "not a job" fails to match/],
  ];
  for (const [payload, message] of cases) {
    const res = await admin.post(jobs(), payload);
    t.is(res.statusCode, 400, JSON.stringify(payload));
    t.regex(res.body.message, message);
  }
  t.is(await countJobs(), before);
});

test('overrides need jobs:harness_override, secret-backed values secrets:read too (403 naming them)', async (t) => {
  const member = as(s.server, memberToken);
  const override = await member.post(jobs(), { description: 'x', harness_profile_override: { entries: [] } });
  t.is(override.statusCode, 403);
  t.is(override.body.message, 'missing permission jobs:harness_override (harness_profile_override)');
  const env = await member.post(jobs(), { description: 'x', env_overrides: { DEBUG: '1' } });
  t.is(env.statusCode, 403);
  t.regex(env.body.message, /missing permission jobs:harness_override/);
  t.is((await member.post(jobs(), { description: 'plain job' })).statusCode, 201, 'members create jobs');
  const asAdmin = await admin.post(jobs(), { description: 'x', env_overrides: { TOKEN: '${secret.API_TOKEN}', MODE: 'fast' } });
  t.is(asAdmin.statusCode, 201, 'admins hold both');
});

test.serial('manifest defaults merge under explicit fields; objects merge key by key', async (t) => {
  manifestDefaults[projectId] = {
    priority: 1,
    labels: ['from-manifest'],
    hints: { timeout_seconds: 600, worker_type: 'node-worker' },
    git: { push: 'on_success', commit: 'auto' },
  };
  try {
    const res = await admin.post(jobs(), {
      description: 'with defaults',
      labels: ['mine'],
      hints: { worker_type: 'rust-worker' },
      git: { commit: 'required' },
    });
    t.is(res.statusCode, 201, JSON.stringify(res.body));
    t.is(res.body.priority, 1);
    t.deepEqual(res.body.labels, ['mine']);
    t.like(res.body.hints, { timeout_seconds: 600, worker_type: 'rust-worker', permission_policy: 'yolo' });
    t.deepEqual(res.body.git, { push: 'on_success', commit: 'required' });
    manifestDefaults[projectId] = { priority: 9 };
    const broken = await admin.post(jobs(), { description: 'bad defaults' });
    t.is(broken.statusCode, 422);
    t.regex(broken.body.message, /x-svc\.defaults are invalid: "priority" must be less than or equal to 4/);
  } finally {
    delete manifestDefaults[projectId];
  }
  t.deepEqual(withDefaults({ hints: { a: 1 } }, { description: 'x' }).hints, { a: 1 });
});

test('lists filter by phase, label, priority, parent and assignee, newest first', async (t) => {
  const project = (await admin.post('/projects', { org_id: orgId, name: 'Filters', slug: 'filt1' })).body.id;
  const a = (await admin.post(jobs(project), { description: 'a', labels: ['ui'], priority: 0 })).body;
  const b = (await admin.post(jobs(project), { description: 'b', labels: ['api'], phase: 'backlog', assignee: 'bob' })).body;
  const c = (await admin.post(jobs(project), { description: 'c', parent_id: a.id })).body;
  const ids = async (q: string) => (await admin.get(`${jobs(project)}?${q}`)).body.data.map((j: { id: string }) => j.id);
  t.deepEqual(await ids(''), [c.id, b.id, a.id]);
  t.deepEqual(await ids('label=ui'), [a.id]);
  t.deepEqual(await ids('phase=backlog'), [b.id]);
  t.deepEqual(await ids('priority=0'), [a.id]);
  t.deepEqual(await ids(`parent_id=${a.id}`), [c.id]);
  t.deepEqual(await ids('assignee=bob'), [b.id]);
  t.is((await admin.get(`${jobs(project)}?phase=nope`)).statusCode, 400);
});

test('PATCH moves between planning phases; other moves are 409 naming the phase; cancel closes', async (t) => {
  const job = (await admin.post(jobs(), { description: 'plan me', phase: 'idea' })).body;
  t.is((await admin.patch(`/jobs/${job.id}`, { phase: 'backlog' })).body.phase, 'backlog');
  const skip = await admin.patch(`/jobs/${job.id}`, { phase: 'done' });
  t.is(skip.statusCode, 409);
  t.is(skip.body.message, `job ${job.id} is backlog: it cannot move to done this way`);
  const cancelled = await admin.patch(`/jobs/${job.id}`, { phase: 'cancelled', close_reason: 'superseded' });
  t.like(cancelled.body, { phase: 'cancelled', close_reason: 'superseded' });
  t.truthy(cancelled.body.closed_at);
  t.is((await admin.patch(`/jobs/${job.id}`, { phase: 'ready' })).statusCode, 409, 'cancelled is terminal');
});

test('unknown, malformed and invisible jobs', async (t) => {
  t.is((await admin.get('/jobs/jobapp-00000000')).statusCode, 404);
  t.is((await admin.get('/jobs/NOT-A-JOB')).statusCode, 400);
  const job = (await admin.post(jobs(), { description: 'private' })).body;
  const outsider = as(s.server, await userInOrg(s.server, adminToken, (await admin.post('/orgs', { name: 'Elsewhere' })).body.id, 'outsider@example.com'));
  const res = await outsider.get(`/jobs/${job.id}`);
  t.is(res.statusCode, 404);
  t.is(res.body.message, `job ${job.id} not found`, 'the project id is not revealed');
  t.is((await outsider.post(jobs(), { description: 'x' })).statusCode, 404);
});

test.serial('unknown hint keys are a 400 naming their path and the likely hint; x- keys are custom hints, kept as sent', async (t) => {
  const before = await countJobs();
  const typo = await admin.post(jobs(), { description: 'x', hints: { timeout_secs: 5, worker_typ: 'gpu', zzz: 1 } });
  t.is(typo.statusCode, 400);
  t.regex(typo.body.message, /"hints\.timeout_secs" is not a known hint \(did you mean "timeout_seconds"\?\)/);
  t.regex(typo.body.message, /"hints\.worker_typ" is not a known hint \(did you mean "worker_type"\?\)/);
  t.regex(typo.body.message, /"hints\.zzz" is not a known hint; custom hints take the prefix "x-"/);
  t.is(await countJobs(), before, 'nothing is created');

  // The hints svc writes on the jobs of pipelines and workflows are not taken from a request.
  const platform = await admin.post(jobs(), { description: 'x', hints: { pipeline_run_id: 'prun_fake' } });
  t.is(platform.statusCode, 400);
  t.regex(platform.body.message, /"hints\.pipeline_run_id" is not a known hint/);

  const created = await admin.post(jobs(), { description: 'x', hints: { timeout_seconds: 5, 'x-team': { name: 'infra' } } });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  t.deepEqual(created.body.hints, { permission_policy: 'yolo', timeout_seconds: 5, 'x-team': { name: 'infra' } });

  const patched = await admin.patch(`/jobs/${created.body.id}`, { hints: { max_attemps: 2 } });
  t.is(patched.statusCode, 400);
  t.regex(patched.body.message, /"hints\.max_attemps" is not a known hint \(did you mean "max_attempts"\?\)/);
});
