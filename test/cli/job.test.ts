import test from 'ava';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { BIN, page, runCli, tempHome, type Recorded } from './helpers.ts';

const JOB = {
  id: 'web-0a1b2c3d',
  project_id: 'proj_1',
  parent_id: null,
  title: 'Fix login',
  phase: 'ready',
  priority: 1,
  issue_type: 'bug',
  labels: ['auth'],
  assignee: null,
  review_required: 'none',
  review_status: null,
  defer_until: null,
  due_at: null,
  created_at: '2025-01-01T00:00:00.000Z',
  updated_at: '2025-01-01T00:00:00.000Z',
  closed_at: null,
  close_reason: null,
};
const CHILD = { ...JOB, id: 'web-0a1b2c3d.1', parent_id: JOB.id, title: 'Child', phase: 'done', priority: 2 };
const FILE = { id: 'att_1', job_id: JOB.id, name: 'notes.md', mime_type: 'text/markdown', size_bytes: 5, created_at: 'c' };
const BYTES = randomBytes(4096);
const DEP = {
  job_id: JOB.id,
  related_job_id: 'web-99999999',
  relation_type: 'blocked_by',
  created_at: 'c',
  related: { id: 'web-99999999', title: 'Schema', phase: 'active' },
};
const DEPENDENT = {
  job_id: 'web-77777777',
  related_job_id: JOB.id,
  relation_type: 'waits_for',
  created_at: 'c',
  related: { id: 'web-77777777', title: 'Deploy', phase: 'ready' },
};
const node = (job: object, children: object[] = []) => ({ job, children });

/** node:http standing in for the API: canned replies per "METHOD /path" (JSON, or raw bytes), every request recorded. */
const requests: Recorded[] = [];
type Reply = { status?: number; body?: unknown; raw?: Buffer };
const routes: Record<string, Reply | ((r: Recorded) => Reply)> = {
  'POST /projects/proj_1/jobs': (r) => ({ status: 201, body: { ...JOB, ...(r.body as object) } }),
  'POST /projects/proj_9/jobs': { status: 201, body: JOB },
  'GET /projects/proj_1/jobs': { body: page([JOB, CHILD], { total: 2 }) },
  'GET /jobs/web-0a1b2c3d': { body: JOB },
  'PATCH /jobs/web-0a1b2c3d': (r) => ({ body: { ...JOB, ...(r.body as object) } }),
  'GET /jobs/web-0a1b2c3d/context': {
    body: {
      job: JOB,
      parent: null,
      children: [CHILD],
      latest_attempt: {
        id: 'u-1',
        attempt_number: 2,
        status: 'failed',
        git: { commits: [], pushed: false, uncommitted: { files: 2, reason: 'git.commit is manual' } },
      },
      latest_rejection_reason: 'tests fail',
      relations: { dependencies: [DEP], dependents: [], blocking: [DEP] },
      blocked: true,
      waiting: false,
      effective_phase: 'blocked',
    },
  },
  'GET /jobs/web-0a1b2c3d/tree': { body: node(JOB, [node(CHILD, [node({ ...CHILD, id: 'web-0a1b2c3d.1.1' })]), node({ ...CHILD, id: 'web-0a1b2c3d.2' })]) },
  'POST /jobs/web-0a1b2c3d/claim': { body: { job: { ...JOB, phase: 'active' }, attempt: { id: 'u-3', attempt_number: 3, lease_token: 'lt-1' } } },
  'POST /jobs/web-0a1b2c3d/release': { body: JOB },
  'POST /jobs/web-0a1b2c3d/submit': { body: { ...JOB, phase: 'review' } },
  'POST /jobs/web-0a1b2c3d/approve': { body: { ...JOB, phase: 'done' } },
  'POST /jobs/web-0a1b2c3d/reject': { body: { ...JOB, phase: 'active' } },
  'GET /jobs/web-0a1b2c3d/dependencies': { body: { dependencies: [DEP], dependents: [DEPENDENT] } },
  'POST /jobs/web-0a1b2c3d/dependencies': (r) => ({ status: 201, body: { job_id: JOB.id, ...(r.body as object) } }),
  'DELETE /jobs/web-0a1b2c3d/dependencies/web-99999999': { status: 204 },
  'GET /jobs/web-0a1b2c3d/attachments': { body: page([FILE]) },
  'POST /jobs/web-0a1b2c3d/attachments': (r) => ({ status: 201, body: { ...FILE, name: (r.body as { name: string }).name } }),
  'GET /jobs/web-0a1b2c3d/attachments/my%20file.bin': { body: { ...FILE, name: 'my file.bin' } },
  'GET /jobs/web-0a1b2c3d/attachments/my%20file.bin/content': { raw: BYTES },
  'DELETE /jobs/web-0a1b2c3d/attachments/notes.md': { status: 204 },
  'GET /projects/proj_1/jobs/web-0a1b2c3d/attempts': {
    body: page([{ id: 'u-1', attempt_number: 1, status: 'failed', started_at: 's', ended_at: 'e', result_summary: 'broke' }]),
  },
  'GET /projects/proj_1/jobs/web-0a1b2c3d/attempts/2': { body: { id: 'u-2', attempt_number: 2, result_json: { svc: { status: 'success' } } } },
  'GET /jobs/web-0a1b2c3d/receipt': { body: { timing: { billable_ms: 1200 }, cost: { base_cost_usd: 0.5 } } },
  'GET /jobs/web-0a1b2c3d/attempts/u-2/receipt': { body: { timing: { billable_ms: 10 } } },
  'GET /jobs/web-0a1b2c3d/attempts/u-3/receipt': {
    body: {
      llm: {
        models: {
          'acme-coder-1': { calls: 1, cost_usd: null, reported_cost_usd: 0.0123, priced_as: 'reported by the CLI' },
          'gpt-4o': { calls: 1, cost_usd: 3.5, reported_cost_usd: 4, priced_as: 'gpt-4o' },
          'gpt-5': { calls: 1, cost_usd: 0.25, reported_cost_usd: null, priced_as: 'gpt-5' },
        },
      },
      cost: { base_cost_usd: 3.75, pricing: 'partial', reported_cost_usd: 4.0123 },
    },
  },
  'GET /jobs/web-0a1b2c3d/compare': { body: { a: 1, b: 2, differences: [{ field: 'status', a: 'failed', b: 'succeeded' }] } },
  'GET /jobs/nope-00000000/context': { status: 404, body: { statusCode: 404, error: 'Not Found', message: 'job nope-00000000 not found' } },
};
let fake: Server;
let url = '';
let home = '';

test.before(async () => {
  home = await tempHome();
  fake = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const u = new URL(req.url ?? '/', 'http://fake');
    const r: Recorded = {
      method: req.method!,
      path: u.pathname,
      query: Object.fromEntries(u.searchParams),
      authorization: req.headers.authorization,
      contentType: req.headers['content-type'],
      body: text ? JSON.parse(text) : undefined,
    };
    requests.push(r);
    const route = routes[`${r.method} ${r.path}`];
    const {
      status = 200,
      body,
      raw,
    } = typeof route === 'function' ? route(r) : (route ?? { status: 404, body: { statusCode: 404, error: 'Not Found', message: 'Not Found' } });
    if (raw) res.writeHead(status, { 'content-type': 'application/octet-stream' }).end(raw);
    else if (body === undefined) res.writeHead(status).end();
    else res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
});
test.after.always(() => fake?.close());

async function svc(args: string[], env: Record<string, string> = {}) {
  const before = requests.length;
  const result = await runCli(home, args, { SVC_API_URL: url, SVC_TOKEN: 'tok-1', ...env });
  return { ...result, requests: requests.slice(before) };
}

test.serial('create sends every flag as the CreateJobRequest; --project is required or taken from the profile', async (t) => {
  const r = await svc([
    'job',
    'create',
    '--project',
    'proj_1',
    '--description',
    'Fix the login',
    '--title',
    'Fix login',
    '--priority',
    '1',
    '--issue-type',
    'bug',
    '--label',
    'auth',
    '--label',
    'p1',
    '--parent',
    'web-11111111',
    '--review-required',
    'human',
    '--harness',
    'harness_a',
    '--defer-until',
    '2030-01-01T00:00:00Z',
    '--due-at',
    '2030-02-01T00:00:00Z',
    '--phase',
    'backlog',
    '--hints',
    '{"max_attempts":3}',
    '--git',
    '{"branch":"fix"}',
  ]);
  t.is(r.code, 0, r.stderr);
  t.is(r.requests.length, 1);
  t.like(r.requests[0], { method: 'POST', path: '/projects/proj_1/jobs', authorization: 'Bearer tok-1', contentType: 'application/json' });
  t.deepEqual(r.requests[0].body, {
    description: 'Fix the login',
    title: 'Fix login',
    priority: 1,
    issue_type: 'bug',
    labels: ['auth', 'p1'],
    parent_id: 'web-11111111',
    review_required: 'human',
    harness: 'harness_a',
    defer_until: '2030-01-01T00:00:00Z',
    due_at: '2030-02-01T00:00:00Z',
    phase: 'backlog',
    hints: { max_attempts: 3 },
    git: { branch: 'fix' },
  });
  t.regex(r.stdout, /^id: +web-0a1b2c3d\nproject_id: +proj_1\n/);
  t.regex(r.stdout, /^labels: +\["auth","p1"\]$/m);

  const json = await svc(['job', 'create', '--project', 'proj_1', '--description', 'd', '--json']);
  t.deepEqual(json.requests[0].body, { description: 'd' });
  t.is(json.stdout, `${JSON.stringify({ ...JOB, description: 'd' }, null, 2)}\n`);

  const profileHome = await tempHome();
  await mkdir(join(profileHome, '.svc'));
  await writeFile(join(profileHome, '.svc', 'config.json'), JSON.stringify({ profiles: { default: { api_url: url, project: 'proj_9' } } }));
  const before = requests.length;
  const fromProfile = await runCli(profileHome, ['job', 'create', '--description', 'x'], { SVC_TOKEN: 't' });
  t.is(fromProfile.code, 0, fromProfile.stderr);
  t.is(requests[before].path, '/projects/proj_9/jobs');

  for (const [args, message] of [
    [['job', 'create', '--description', 'x'], /--project is required/],
    [['job', 'create', '--project', 'proj_1'], /--description is required/],
    [['job', 'create', '--project', 'proj_1', '--description', 'x', '--hints', '{bad'], /--hints must be JSON/],
    [['job', 'create', '--project', 'proj_1', '--description', 'x', '--git', '[1]'], /--git must be a JSON object/],
    [['job', 'create', '--project', 'proj_1', '--description', 'x', '--priority', 'high'], /--priority must be a non-negative integer/],
    [['job', 'update', 'web-0a1b2c3d'], /nothing to update/],
    [['job', 'frob'], /unknown job command "frob"/],
  ] as const) {
    const bad = await svc([...args]);
    t.is(bad.code, 2, args.join(' '));
    t.regex(bad.stderr, message);
    t.regex(bad.stderr, /\nsvc: see 'svc job --help'\n$/);
    t.is(bad.requests.length, 0);
  }
});

test.serial('list sends the filters and prints id, phase, priority, title', async (t) => {
  const r = await svc([
    'job',
    'list',
    '--project',
    'proj_1',
    '--phase',
    'ready',
    '--label',
    'auth',
    '--assignee',
    'ada',
    '--issue-type',
    'bug',
    '--priority',
    '1',
    '--parent',
    'web-11111111',
    '--due-before',
    '2030-01-01',
    '--limit',
    '5',
    '--offset',
    '10',
  ]);
  t.is(r.code, 0, r.stderr);
  t.like(r.requests[0], { method: 'GET', path: '/projects/proj_1/jobs' });
  t.deepEqual(r.requests[0].query, {
    phase: 'ready',
    label: 'auth',
    assignee: 'ada',
    issue_type: 'bug',
    priority: '1',
    parent_id: 'web-11111111',
    due_before: '2030-01-01',
    limit: '5',
    offset: '10',
  });
  t.is(r.stdout, 'ID              PHASE  PRI  TITLE\nweb-0a1b2c3d    ready  1    Fix login\nweb-0a1b2c3d.1  done   2    Child\n');
  t.is((await svc(['job', 'list', '--project', 'proj_1', '--json'])).stdout, `${JSON.stringify(page([JOB, CHILD], { total: 2 }), null, 2)}\n`);
});

test.serial('get, update and cancel', async (t) => {
  let r = await svc(['job', 'get', 'web-0a1b2c3d']);
  t.like(r.requests[0], { method: 'GET', path: '/jobs/web-0a1b2c3d/context', body: undefined });
  t.regex(r.stdout, /^phase: +ready$/m);
  t.regex(r.stdout, /^work: +2 files changed, not committed: git.commit is manual$/m, "what became of the latest attempt's changes");
  t.like((await svc(['job', 'get', 'web-0a1b2c3d', '--json'])).requests[0], { path: '/jobs/web-0a1b2c3d' });
  r = await svc([
    'job',
    'update',
    'web-0a1b2c3d',
    '--title',
    'T',
    '--priority',
    '0',
    '--phase',
    'backlog',
    '--label',
    'a',
    '--unassign',
    '--defer-until',
    'none',
    '--due-at',
    '2030-01-01T00:00:00Z',
    '--hints',
    '{"gates":["db"]}',
  ]);
  t.is(r.code, 0, r.stderr);
  t.like(r.requests[0], { method: 'PATCH', path: '/jobs/web-0a1b2c3d' });
  t.deepEqual(r.requests[0].body, {
    title: 'T',
    priority: 0,
    phase: 'backlog',
    labels: ['a'],
    assignee: null,
    defer_until: null,
    due_at: '2030-01-01T00:00:00Z',
    hints: { gates: ['db'] },
  });
  r = await svc(['job', 'cancel', 'web-0a1b2c3d', '--reason', 'superseded']);
  t.deepEqual(r.requests[0].body, { phase: 'cancelled', close_reason: 'superseded' });
  t.regex(r.stdout, /^phase: +cancelled$/m);
  r = await svc(['job', 'cancel', 'web-0a1b2c3d']);
  t.deepEqual(r.requests[0].body, { phase: 'cancelled' });
  r = await svc(['job', 'get', 'nope-00000000']);
  t.is(r.code, 1);
  t.is(r.stderr, 'svc: job nope-00000000 not found (404)\n');
});

test.serial('context and tree render readably; --json is the body', async (t) => {
  let r = await svc(['job', 'context', 'web-0a1b2c3d']);
  t.like(r.requests[0], { method: 'GET', path: '/jobs/web-0a1b2c3d/context' });
  t.is(
    r.stdout,
    [
      'job:              web-0a1b2c3d  [ready]  P1  Fix login',
      'effective_phase:  blocked (job phase ready)',
      'parent:           -',
      'children:',
      '  web-0a1b2c3d.1  [done]  P2  Child',
      'dependencies:',
      '  web-0a1b2c3d blocked_by web-99999999  [active]  Schema',
      'dependents: none',
      'blocking:',
      '  web-0a1b2c3d blocked_by web-99999999  [active]  Schema',
      'latest_attempt:',
      '  id:              u-1',
      '  attempt_number:  2',
      '  status:          failed',
      '  work:            2 files changed, not committed: git.commit is manual',
      'latest_rejection_reason:  tests fail',
      '',
    ].join('\n'),
  );
  t.deepEqual(JSON.parse((await svc(['job', 'context', 'web-0a1b2c3d', '--json'])).stdout), (routes['GET /jobs/web-0a1b2c3d/context'] as Reply).body);
  r = await svc(['job', 'tree', 'web-0a1b2c3d']);
  t.like(r.requests[0], { method: 'GET', path: '/jobs/web-0a1b2c3d/tree' });
  const tree = [
    'web-0a1b2c3d  [ready]  P1  Fix login',
    '├── web-0a1b2c3d.1  [done]  P2  Child',
    '│   └── web-0a1b2c3d.1.1  [done]  P2  Child',
    '└── web-0a1b2c3d.2  [done]  P2  Child',
    '',
  ];
  t.is(r.stdout, tree.join('\n'));
});

test.serial('claim, release, submit, approve, reject post their bodies', async (t) => {
  let r = await svc(['job', 'claim', 'web-0a1b2c3d']);
  t.like(r.requests[0], { method: 'POST', path: '/jobs/web-0a1b2c3d/claim', body: {} });
  t.regex(r.stdout, /^phase: +active$/m);
  t.regex(r.stdout, /^attempt:\n  id: +u-3\n  attempt_number: +3\n  lease_token: +lt-1$/m);
  r = await svc(['job', 'release', 'web-0a1b2c3d', '--attempt', 'u-3', '--token', 'lt-1']);
  t.deepEqual(r.requests[0].body, { attempt_id: 'u-3', lease_token: 'lt-1' });
  r = await svc(['job', 'submit', 'web-0a1b2c3d', '--summary', 'done it']);
  t.like(r.requests[0], { path: '/jobs/web-0a1b2c3d/submit', body: { summary: 'done it' } });
  r = await svc(['job', 'approve', 'web-0a1b2c3d', '--comment', 'lgtm']);
  t.like(r.requests[0], { path: '/jobs/web-0a1b2c3d/approve', body: { comment: 'lgtm' } });
  t.deepEqual((await svc(['job', 'approve', 'web-0a1b2c3d'])).requests[0].body, {});
  r = await svc(['job', 'reject', 'web-0a1b2c3d', '--reason', 'no tests']);
  t.like(r.requests[0], { path: '/jobs/web-0a1b2c3d/reject', body: { reason: 'no tests' } });
  for (const args of [
    ['submit', 'web-0a1b2c3d'],
    ['reject', 'web-0a1b2c3d'],
    ['release', 'web-0a1b2c3d', '--attempt', 'u-3'],
  ]) {
    const bad = await svc(['job', ...args]);
    t.is(bad.code, 2, args.join(' '));
    t.is(bad.requests.length, 0);
  }
});

test.serial('deps list, add, remove', async (t) => {
  let r = await svc(['job', 'deps', 'list', 'web-0a1b2c3d']);
  t.like(r.requests[0], { method: 'GET', path: '/jobs/web-0a1b2c3d/dependencies' });
  t.is(
    r.stdout,
    'dependencies:\n  web-0a1b2c3d blocked_by web-99999999  [active]  Schema\ndependents:\n  web-77777777 waits_for web-0a1b2c3d  [ready]  Deploy\n',
  );
  t.deepEqual(JSON.parse((await svc(['job', 'deps', 'list', 'web-0a1b2c3d', '--json'])).stdout), { dependencies: [DEP], dependents: [DEPENDENT] });
  r = await svc(['job', 'deps', 'add', 'web-0a1b2c3d', '--on', 'web-99999999']);
  t.like(r.requests[0], { method: 'POST', path: '/jobs/web-0a1b2c3d/dependencies', body: { related_job_id: 'web-99999999', relation_type: 'blocked_by' } });
  t.is(r.stdout, 'Job web-0a1b2c3d blocked_by web-99999999.\n');
  r = await svc(['job', 'deps', 'add', 'web-0a1b2c3d', '--on', 'web-99999999', '--type', 'waits_for', '--json']);
  t.deepEqual(JSON.parse(r.stdout), { job_id: JOB.id, related_job_id: 'web-99999999', relation_type: 'waits_for' });
  r = await svc(['job', 'deps', 'remove', 'web-0a1b2c3d', 'web-99999999']);
  t.like(r.requests[0], { method: 'DELETE', path: '/jobs/web-0a1b2c3d/dependencies/web-99999999' });
});

test.serial('attachments add (base64 of the file), list, get to a file or stdout, remove', async (t) => {
  const file = join(home, 'notes.md');
  await writeFile(file, '# hi\n');
  let r = await svc(['job', 'attachments', 'add', 'web-0a1b2c3d', file]);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(r.requests[0].body, { name: 'notes.md', mime_type: 'text/markdown', content: Buffer.from('# hi\n').toString('base64'), encoding: 'base64' });
  r = await svc(['job', 'attachments', 'add', 'web-0a1b2c3d', file, '--name', 'other', '--mime', 'text/plain']);
  t.like(r.requests[0].body, { name: 'other', mime_type: 'text/plain' });
  t.regex(r.stdout, /^name: +other$/m);
  r = await svc(['job', 'attachments', 'add', 'web-0a1b2c3d', join(home, 'missing.txt')]);
  t.is(r.code, 1);
  t.regex(r.stderr, /cannot read .*missing\.txt/);
  r = await svc(['job', 'attachments', 'list', 'web-0a1b2c3d', '--limit', '3']);
  t.like(r.requests[0], { path: '/jobs/web-0a1b2c3d/attachments', query: { limit: '3' } });
  t.is(r.stdout, 'NAME      SIZE  TYPE           CREATED\nnotes.md  5     text/markdown  c\n');
  const out = join(home, 'out.bin');
  r = await svc(['job', 'attachments', 'get', 'web-0a1b2c3d', 'my file.bin', '--output', out]);
  t.is(r.code, 0, r.stderr);
  t.like(r.requests[0], { method: 'GET', path: '/jobs/web-0a1b2c3d/attachments/my%20file.bin/content', authorization: 'Bearer tok-1' });
  t.true((await readFile(out)).equals(BYTES));
  t.is(r.stdout, `Saved my file.bin (4096 bytes) to ${out}.\n`);
  const stdout = await new Promise<Buffer>((resolve, reject) =>
    execFile(
      process.execPath,
      [BIN, 'job', 'attachments', 'get', 'web-0a1b2c3d', 'my file.bin'],
      { env: { PATH: process.env.PATH, HOME: home, SVC_API_URL: url, SVC_TOKEN: 't' }, encoding: 'buffer' },
      (e, o) => (e ? reject(e) : resolve(o)),
    ),
  );
  t.true(stdout.equals(BYTES));
  r = await svc(['job', 'attachments', 'get', 'web-0a1b2c3d', 'my file.bin', '--json']);
  t.deepEqual(
    r.requests.map((q) => q.path),
    ['/jobs/web-0a1b2c3d/attachments/my%20file.bin'],
  );
  t.deepEqual(JSON.parse(r.stdout), { ...FILE, name: 'my file.bin' });
  r = await svc(['job', 'attachments', 'remove', 'web-0a1b2c3d', 'notes.md']);
  t.like(r.requests[0], { method: 'DELETE', path: '/jobs/web-0a1b2c3d/attachments/notes.md' });
  t.is(r.stdout, 'Removed attachment notes.md from job web-0a1b2c3d.\n');
});

test.serial('attempts, receipt and compare', async (t) => {
  let r = await svc(['job', 'attempts', 'web-0a1b2c3d', '--project', 'proj_1', '--limit', '5']);
  t.like(r.requests[0], { method: 'GET', path: '/projects/proj_1/jobs/web-0a1b2c3d/attempts', query: { limit: '5' } });
  t.is(r.stdout, '#  ID   STATUS  STARTED  ENDED  SUMMARY\n1  u-1  failed  s        e      broke\n');
  r = await svc(['job', 'attempts', 'web-0a1b2c3d', '2', '--project', 'proj_1']);
  t.is(r.requests[0].path, '/projects/proj_1/jobs/web-0a1b2c3d/attempts/2');
  t.is(r.stdout, 'id:              u-2\nattempt_number:  2\nresult_json:\n  svc:\n    status:  success\n');
  t.is((await svc(['job', 'attempts', 'web-0a1b2c3d'])).code, 2);
  r = await svc(['job', 'receipt', 'web-0a1b2c3d']);
  t.is(r.requests[0].path, '/jobs/web-0a1b2c3d/receipt');
  t.is(r.stdout, 'timing:\n  billable_ms:  1200\ncost:\n  base_cost_usd:  0.5\n');
  r = await svc(['job', 'receipt', 'web-0a1b2c3d', '--attempt', 'u-2', '--json']);
  t.is(r.requests[0].path, '/jobs/web-0a1b2c3d/attempts/u-2/receipt');
  t.deepEqual(JSON.parse(r.stdout), { timing: { billable_ms: 10 } });
  r = await svc(['job', 'receipt', 'web-0a1b2c3d', '--attempt', 'u-3']);
  t.true(r.stdout.includes('\n      priced_as:          reported by the CLI\n'), r.stdout);
  t.true(
    r.stdout.endsWith(
      '\nreported by the CLI: $4.0123 (not billed)\n  acme-coder-1: $0.0123 (no price on the rate card)\n  gpt-4o: $4.00 (priced $3.50 as gpt-4o)\n',
    ),
    r.stdout,
  );
  r = await svc(['job', 'compare', 'web-0a1b2c3d', '--a', '1', '--b', '2', '--include-receipt']);
  t.like(r.requests[0], { path: '/jobs/web-0a1b2c3d/compare', query: { a: '1', b: '2', include_receipt: 'true' } });
  t.is(r.stdout, 'a:  1\nb:  2\ndifferences:\n  - field:  status\n    a:      failed\n    b:      succeeded\n');
  t.deepEqual((await svc(['job', 'compare', 'web-0a1b2c3d', '--a', '1', '--b', '2'])).requests[0].query, { a: '1', b: '2' });
});
