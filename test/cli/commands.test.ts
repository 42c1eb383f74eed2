import test from 'ava';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { ORG, USER, page, runCli, startFake, tempHome, type FakeApi } from './helpers.ts';

const PROJECT = {
  id: 'prj_1',
  org_id: 'org_1',
  name: 'Web',
  slug: 'web',
  repo_url: 'https://git.example.com/web.git',
  branch: 'main',
  deleted: false,
  created_at: '2025-01-02T00:00:00.000Z',
  updated_at: '2025-01-02T00:00:00.000Z',
};
const MEMBER = { user_id: 'usr_2', email: 'bob@example.com', display_name: null, role: 'member', created_at: 'c', updated_at: 'u' };

let fake: FakeApi;
let home: string;

test.before(async () => {
  home = await tempHome();
  fake = await startFake();
  const second = { ...ORG, id: 'org_22', name: 'Globex Corporation', slug: 'globex' };
  fake
    .on('GET', '/orgs', (req) => ({ body: page([ORG, second], { total: 5, has_more: req.query.limit === '2', limit: Number(req.query.limit ?? 10) }) }))
    .on('POST', '/orgs', (req) => ({ status: 201, body: { ...ORG, ...(req.body as object) } }))
    .on('POST', '/orgs/ensure', { body: ORG })
    .on('GET', '/orgs/org_1', { body: ORG })
    .on('GET', '/orgs/missing', { status: 404, body: { statusCode: 404, error: 'Not Found', message: 'Org not found' } })
    .on('PATCH', '/orgs/org_1', (req) => ({ body: { ...ORG, ...(req.body as object) } }))
    .on('DELETE', '/orgs/org_1', { status: 204 })
    .on('GET', '/orgs/org_1/members', { body: page([MEMBER]) })
    .on('POST', '/orgs/org_1/members', { status: 201, body: MEMBER })
    .on('PATCH', '/orgs/org_1/members/usr_2', { body: { ...MEMBER, role: 'admin' } })
    .on('DELETE', '/orgs/org_1/members/usr_2', { status: 204 })
    .on('GET', '/projects', { body: page([PROJECT]) })
    .on('POST', '/projects', { status: 201, body: PROJECT })
    .on('POST', '/projects/ensure', { body: PROJECT })
    .on('PATCH', '/projects/prj_1', { body: PROJECT })
    .on('DELETE', '/projects/prj_1', { status: 204 })
    .on('POST', '/projects/prj_1/members', { status: 201, body: MEMBER })
    .on('GET', '/auth/bootstrap/status', { body: { completed: false, window_open: true, window_closes_at: null, requires_token: true, mode: 'first-user' } })
    .on('POST', '/auth/mint', {
      status: 201,
      body: { access_token: 'minted-tok', token_type: 'Bearer', expires_at: 'x', user: USER, scope: { org_id: 'org_1' }, role: 'admin' },
    })
    .on('GET', '/auth/keys', { body: page([{ id: 'key_1', type: 'ssh-ed25519', fingerprint: 'SHA256:abc', label: null, created_at: 'c' }]) })
    .on('DELETE', '/auth/keys/key_1', { status: 204 })
    .on('GET', '/auth/me', { status: 401, body: { statusCode: 401, error: 'Unauthorized', message: 'Missing authentication' } });
});
test.after.always(() => fake?.stop());

/** Run against the fake with a token and return the result plus the one request it made. */
async function call(args: string[], env: Record<string, string> = {}) {
  const before = fake.requests.length;
  const result = await runCli(home, args, { SVC_API_URL: fake.url, SVC_TOKEN: 'tok-1', ...env });
  return { ...result, requests: fake.requests.slice(before) };
}

test.serial('org list prints an aligned table, pagination note on stderr, and sends the query', async (t) => {
  const r = await call(['org', 'list', '--limit', '2', '--include-deleted']);
  t.is(r.code, 0, r.stderr);
  t.like(r.requests[0], { method: 'GET', path: '/orgs', query: { limit: '2', include_deleted: 'true' }, authorization: 'Bearer tok-1' });
  t.is(
    r.stdout,
    [
      'ID      NAME                SLUG    DELETED  CREATED',
      'org_1   Acme                acme    false    2025-01-01T00:00:00.000Z',
      'org_22  Globex Corporation  globex  false    2025-01-01T00:00:00.000Z',
      '',
    ].join('\n'),
  );
  t.regex(r.stderr, /Showing 1-2 of 5 orgs; next page: --offset 2/);
});

test.serial('--json prints the API body exactly, pretty with two spaces', async (t) => {
  const r = await call(['--json', 'org', 'list']);
  t.is(r.code, 0);
  t.is(r.stdout, `${JSON.stringify(page([ORG, { ...ORG, id: 'org_22', name: 'Globex Corporation', slug: 'globex' }], { total: 5 }), null, 2)}\n`);
  const get = await call(['org', 'get', 'org_1', '--json']);
  t.deepEqual(JSON.parse(get.stdout), ORG);
});

test.serial('single objects print as key: value', async (t) => {
  const r = await call(['org', 'get', 'org_1']);
  t.is(r.stdout.split('\n')[0], 'id:          org_1');
  t.regex(r.stdout, /^slug: {8}acme$/m);
});

test.serial('org create / ensure / update / delete send the right requests', async (t) => {
  let r = await call(['org', 'create', 'Acme', '--slug', 'acme']);
  t.is(r.code, 0, r.stderr);
  t.like(r.requests[0], { method: 'POST', path: '/orgs', body: { name: 'Acme', slug: 'acme' }, contentType: 'application/json' });
  r = await call(['org', 'ensure', 'Acme', '--id', 'org_1']);
  t.like(r.requests[0], { method: 'POST', path: '/orgs/ensure', body: { name: 'Acme', id: 'org_1' } });
  r = await call(['org', 'update', '--org', 'org_1', '--name', 'Acme 2', '--restore']);
  t.like(r.requests[0], { method: 'PATCH', path: '/orgs/org_1', body: { name: 'Acme 2', deleted: false } });
  r = await call(['org', 'delete', 'org_1']);
  t.is(r.code, 0);
  t.like(r.requests[0], { method: 'DELETE', path: '/orgs/org_1', body: undefined });
  t.is(r.stdout, 'Deleted org org_1.\n');
  r = await call(['org', 'delete', 'org_1', '--json']);
  t.is(r.stdout, '');
});

test.serial('org members commands take the org from --org or the positional', async (t) => {
  let r = await call(['org', 'members', 'add', '--org', 'org_1', '--email', 'bob@example.com']);
  t.like(r.requests[0], { method: 'POST', path: '/orgs/org_1/members', body: { email: 'bob@example.com', role: 'member' } });
  r = await call(['org', 'members', 'set-role', 'org_1', 'usr_2', '--role', 'admin']);
  t.like(r.requests[0], { method: 'PATCH', path: '/orgs/org_1/members/usr_2', body: { role: 'admin' } });
  r = await call(['--org', 'org_1', 'org', 'members', 'remove', 'usr_2']);
  t.like(r.requests[0], { method: 'DELETE', path: '/orgs/org_1/members/usr_2' });
  r = await call(['org', 'members', 'list', 'org_1']);
  t.regex(r.stdout, /^USER_ID +EMAIL +NAME +ROLE +ADDED\nusr_2 +bob@example\.com +- +member +c\n$/);
});

test.serial('project commands', async (t) => {
  let r = await call(['project', 'list', '--org', 'org_1']);
  t.like(r.requests[0], { method: 'GET', path: '/projects', query: { org_id: 'org_1' } });
  t.regex(r.stdout, /^ID +NAME +SLUG +ORG +REPO +BRANCH\nprj_1 +Web +web +org_1 +https:\/\/git\.example\.com\/web\.git +main\n$/);
  r = await call(['project', 'create', 'Web', '--org', 'org_1', '--repo-url', 'https://git.example.com/web.git', '--branch', 'main']);
  t.like(r.requests[0], {
    method: 'POST',
    path: '/projects',
    body: { org_id: 'org_1', name: 'Web', repo_url: 'https://git.example.com/web.git', branch: 'main' },
  });
  r = await call(['project', 'ensure', 'Web', '--org', 'org_1', '--slug', 'web', '--id', 'prj_1']);
  t.like(r.requests[0], { path: '/projects/ensure', body: { org_id: 'org_1', name: 'Web', slug: 'web', id: 'prj_1' } });
  r = await call(['project', 'update', '--project', 'prj_1', '--branch', 'dev']);
  t.like(r.requests[0], { method: 'PATCH', path: '/projects/prj_1', body: { branch: 'dev' } });
  r = await call(['project', 'members', 'add', '--project', 'prj_1', '--email', 'bob@example.com', '--role', 'admin']);
  t.like(r.requests[0], { path: '/projects/prj_1/members', body: { email: 'bob@example.com', role: 'admin' } });
  r = await call(['project', 'delete', 'prj_1']);
  t.like(r.requests[0], { method: 'DELETE', path: '/projects/prj_1' });
  r = await call(['project', 'create', 'Web']);
  t.is(r.code, 2);
  t.regex(r.stderr, /--org is required/);
});

test.serial('auth status, keys and mint', async (t) => {
  let r = await call(['auth', 'status']);
  t.like(r.requests[0], { method: 'GET', path: '/auth/bootstrap/status', authorization: undefined });
  t.regex(r.stdout, /^window_open: +true$/m);
  r = await call(['auth', 'keys', 'list']);
  t.regex(r.stdout, /^key_1 +ssh-ed25519 +SHA256:abc +- +c$/m);
  r = await call(['auth', 'keys', 'remove', 'key_1']);
  t.like(r.requests[0], { method: 'DELETE', path: '/auth/keys/key_1' });
  r = await call(['auth', 'mint', '--email', USER.email, '--org', 'org_1', '--role', 'admin', '--ttl-days', '7']);
  t.is(r.code, 0, r.stderr);
  t.like(r.requests[0], { method: 'POST', path: '/auth/mint', authorization: 'Bearer tok-1' });
  t.deepEqual(r.requests[0].body, { email: USER.email, org_id: 'org_1', role: 'admin', ttl_days: 7 });
  t.is(r.stdout, 'minted-tok\n');
  r = await call(['auth', 'mint', '--email', USER.email]);
  t.is(r.code, 2);
  t.regex(r.stderr, /exactly one of --org ID or --project ID/);
});

test.serial('HTTP errors print the server message and status, exit 1', async (t) => {
  const r = await call(['org', 'get', 'missing']);
  t.is(r.code, 1);
  t.is(r.stdout, '');
  t.is(r.stderr, 'svc: Org not found (404)\n');
  const me = await runCli(home, ['auth', 'whoami', '--api-url', fake.url]);
  t.is(me.code, 1);
  t.regex(me.stderr, /^svc: Missing authentication \(401\)\nsvc: hint: not logged in to http:\/\/127\.0\.0\.1:\d+/);
});

test('usage errors exit 2 with one line and a pointer to the help; --help exits 0', async (t) => {
  const h = await tempHome();
  for (const args of [[], ['bogus'], ['org'], ['org', 'frobnicate'], ['org', 'list', '--limit', 'ten'], ['org', 'get', 'a', 'b'], ['org', 'list', '--nope']]) {
    const r = await runCli(h, args);
    t.is(r.code, 2, args.join(' '));
    t.regex(r.stderr, /^svc: [^\n]+\nsvc: see 'svc( org)? --help'\n$/, args.join(' '));
  }
  const typo = await runCli(h, ['jbo', 'list']);
  t.is(typo.stderr, `svc: unknown command "jbo"; did you mean "job"?\nsvc: see 'svc --help'\n`);
  const subTypo = await runCli(h, ['org', 'lsit']);
  t.is(subTypo.stderr, `svc: unknown org command "lsit"; did you mean "list"?\nsvc: see 'svc org --help'\n`);
  const optionTypo = await runCli(h, ['org', 'list', '--limt', '3']);
  t.regex(optionTypo.stderr, /^svc: Unknown option '--limt'; did you mean --limit\?\n/);
  const version = await runCli(h, ['--version']);
  t.is(version.code, 0);
  t.regex(version.stdout, /^svc \d+\.\d+\.\d+\n$/);
  const help = await runCli(h, ['org', 'members', '--help']);
  t.is(help.code, 0);
  t.regex(help.stdout, /^usage: svc org <command>/);
  const top = await runCli(h, ['-h']);
  t.regex(top.stdout, /~\/\.svc\/config\.json/);
});

test('every command has help with examples of its own: svc --help lists them, svc CMD --help shows "Examples:"', async (t) => {
  const h = await tempHome();
  const top = await runCli(h, ['--help']);
  t.regex(top.stdout, /\nExamples:\n {2}svc /);
  const commands = [...top.stdout.split('\nExamples:\n')[0].matchAll(/^ {2}([a-z][\w-]*) /gm)].map((m) => m[1]);
  t.true(commands.length >= 20 && commands.includes('serve') && commands.includes('job'), commands.join(' '));
  for (const command of commands) {
    const help = await runCli(h, [command, '--help']);
    t.is(help.code, 0, command);
    t.regex(help.stdout, new RegExp(`^usage: svc ${command}`), command);
    t.regex(help.stdout, new RegExp(`\\nExamples:\\n(  svc ${command} .+\\n)+`), `svc ${command} --help shows examples of ${command}`);
  }
});

test('a refused connection names the URL and exits 1', async (t) => {
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
  const r = await runCli(await tempHome(), ['org', 'list', '--api-url', `http://127.0.0.1:${port}`]);
  t.is(r.code, 1);
  t.regex(r.stderr, new RegExp(`^svc: cannot reach the svc API at http://127\\.0\\.0\\.1:${port} \\(GET /orgs\\): .*ECONNREFUSED`));
});
