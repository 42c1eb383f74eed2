/**
 * Issue 29, item 7: small input defects, each attacked as a tenant (or a replaying stranger) would
 * over HTTP. Bad input is 400 naming the field, and nothing is written.
 *  1. reserved env_overrides names (the manifest's rule) in the jobs API;
 *  2. git.ref / git.branch that git would read as an option or refuse (check-ref-format);
 *  3. a repo_url whose host or user git would read as an ssh option (ssh://-oProxyCommand=…);
 *  4. a signed push or pull_request delivery replayed under a new delivery id;
 *  5. a request body trickled in to hold a connection (server.body_timeout_ms, 408).
 */
import test from 'ava';
import net from 'node:net';
import { as, bootstrapAdmin, startTestServer, userInOrg, type TestServer } from '../support/server.ts';
import { deliver, hubSignature } from '../integrations/helpers.ts';
import { pullRequest, push } from '../fixtures/vcshost/deliveries.ts';
import { RESERVED_ENV_NAMES } from '../../domain/manifest/validate-env.ts';

let s: TestServer;
let admin: ReturnType<typeof as>;
let member: ReturnType<typeof as>;
let orgId: string;
let projectId: string;
let adminToken: string;

test.before(async () => {
  s = await startTestServer({ overrides: { roles: ['api'] } });
  adminToken = (await bootstrapAdmin(s.server)).token;
  admin = as(s.server, adminToken);
  orgId = (await admin.post('/orgs', { name: 'Tenant' })).body.id;
  member = as(s.server, await userInOrg(s.server, adminToken, orgId, 'member@example.com', 'member'));
  const res = await admin.post('/projects', { org_id: orgId, name: 'inputs', slug: 'inputs', repo_url: 'https://git.example.com/tenant/app.git' });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  projectId = res.body.id;
});

test.after.always(async () => {
  await s?.stop();
});

const jobCount = async () => (await admin.get(`/projects/${projectId}/jobs?limit=1&include_deleted=true`)).body.pagination.total as number;

/** A 400 whose message names `field`, and no job made. */
async function refusedJob(t: any, request: Record<string, unknown>, field: string, as = admin) {
  const before = await jobCount();
  const res = await as.post(`/projects/${projectId}/jobs`, { description: 'try it', phase: 'backlog', ...request });
  t.is(res.statusCode, 400, JSON.stringify(res.body));
  t.true(String(res.body?.message).includes(field), `the message names ${field}: ${res.body?.message}`);
  t.is(await jobCount(), before, 'no job is made');
}

// 1. Reserved env_overrides names: the manifest's own list (PATH, HOME, LD_PRELOAD, …) and SVC_*.

for (const name of [...RESERVED_ENV_NAMES, 'SVC_JOB_TOKEN', 'SVC_API_URL', 'SVC_ANYTHING']) {
  test.serial(`env_overrides.${name} is 400 naming env_overrides.${name}`, async (t) => {
    await refusedJob(t, { env_overrides: { [name]: '/tmp/evil' } }, `env_overrides.${name}`);
  });
}

test.serial('env_overrides with ordinary names are still accepted', async (t) => {
  const res = await admin.post(`/projects/${projectId}/jobs`, { description: 'ok', phase: 'backlog', env_overrides: { MY_FLAG: '1', SVCX: 'a' } });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
});

test.serial('a workflow invocation refuses reserved env_overrides names too', async (t) => {
  const res = await admin.post(`/projects/${projectId}/workflows/nothing/invoke`, { env_overrides: { LD_PRELOAD: '/tmp/x.so' } });
  t.is(res.statusCode, 400, JSON.stringify(res.body));
  t.regex(String(res.body.message), /env_overrides\.LD_PRELOAD/);
});

// 2. git.ref and git.branch: what git check-ref-format refuses, and anything git would read as an option.

const BAD_REFS = [
  '-oProxyCommand=touch /tmp/pwned',
  '--upload-pack=touch /tmp/pwned',
  '-',
  'main..evil',
  '..',
  'a\x01b',
  'a\x7fb',
  'with space',
  'a~1',
  'a^',
  'a:b',
  'a?',
  'a*',
  'a[b',
  'a\\b',
  'a@{1}',
  '@',
  'feature.lock',
  'feature/',
  '/feature',
  'a//b',
  '.hidden',
  'a/.hidden',
  'a.',
  'refs/heads/x.lock/y',
];

for (const key of ['ref', 'branch'] as const) {
  for (const bad of BAD_REFS) {
    test.serial(`git.${key} ${JSON.stringify(bad)} is 400 naming git.${key}`, async (t) => {
      await refusedJob(t, { git: { [key]: bad } }, `git.${key}`, member);
    });
  }
}

for (const good of [
  'main',
  'feature/x-1',
  'release/2.0',
  'v1.2.3',
  'refs/heads/main',
  'refs/tags/v1',
  'HEAD',
  'abc1234',
  '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
  'a-b_c+d',
]) {
  test.serial(`git.ref and git.branch ${good} are still accepted`, async (t) => {
    const res = await member.post(`/projects/${projectId}/jobs`, {
      description: 'ok',
      phase: 'backlog',
      git: { ref: good, branch: good.replace(/^refs\/\w+\//, 'b/') },
    });
    t.is(res.statusCode, 201, JSON.stringify(res.body));
  });
}

// 3. repo_url: no host or user git would hand to ssh as an option.

const BAD_REPO_URLS = [
  'ssh://-oProxyCommand=touch%20/tmp/pwned/x',
  'ssh://-oProxyCommand=touch /tmp/pwned/x',
  'ssh://-oProxyCommand=x@host/path',
  'ssh://git@-oProxyCommand=x/path',
  'git+ssh://-oProxyCommand=x/path',
  '-oProxyCommand=x@host:path',
  'git@-oProxyCommand=x:path',
  'ssh://host/-path',
];

for (const bad of BAD_REPO_URLS) {
  test.serial(`repo_url ${bad} is 400 naming repo_url at POST and PATCH /projects`, async (t) => {
    const before = (await admin.get(`/projects?org_id=${orgId}&limit=100`)).body.pagination.total;
    const created = await admin.post('/projects', { org_id: orgId, name: 'evil', repo_url: bad });
    t.is(created.statusCode, 400, JSON.stringify(created.body));
    t.regex(String(created.body.message), /repo_url/);
    t.is((await admin.get(`/projects?org_id=${orgId}&limit=100`)).body.pagination.total, before, 'no project is made');
    const patched = await admin.patch(`/projects/${projectId}`, { repo_url: bad });
    t.is(patched.statusCode, 400, JSON.stringify(patched.body));
    t.regex(String(patched.body.message), /repo_url/);
    t.is((await admin.get(`/projects/${projectId}`)).body.repo_url, 'https://git.example.com/tenant/app.git', 'the project is unchanged');
  });
}

test.serial('ordinary SSH and https repo_urls are still accepted', async (t) => {
  for (const url of ['ssh://git@git.example.com/tenant/app.git', 'ssh://git.example.com:2222/tenant/app.git', 'git@git.example.com:tenant/app.git']) {
    const res = await admin.post('/projects', { org_id: orgId, name: 'fine', repo_url: url });
    t.is(res.statusCode, 201, `${url}: ${JSON.stringify(res.body)}`);
  }
});

// 4. A signed push replayed under a new delivery id is the same push: one event.

test.serial('the same signed push body sent again with another delivery id makes no second event', async (t) => {
  const secret = 'input-rules-webhook-secret';
  t.is((await admin.post(`/projects/${projectId}/secrets`, { name: 'VCSHOST_WEBHOOK_SECRET', value: secret })).statusCode, 201);
  const raw = JSON.stringify(push('refs/heads/replayed'));
  const send = (delivery: string) =>
    deliver(s.server, `/integrations/vcshost/events/${projectId}`, raw, {
      'x-github-event': 'push',
      'x-github-delivery': delivery,
      'x-hub-signature-256': hubSignature(secret, raw),
    });
  const events = () => s.kernel.db('events').where({ project_id: projectId, type: 'vcshost.push' });
  const first = await send('11111111-aaaa-4000-8000-000000000001');
  t.is(first.statusCode, 201, JSON.stringify(first.body));
  const replay = await send('22222222-bbbb-4000-8000-000000000002');
  t.is(replay.statusCode, 200, 'answered like a redelivery');
  t.is(replay.body.id, first.body.id, 'with the first event');
  t.is((await events()).length, 1, 'one event');
  // Another push (another after) on the same ref is a new event.
  const next = JSON.stringify({ ...push('refs/heads/replayed', 'b'.repeat(40)), before: push().after });
  const other = await deliver(s.server, `/integrations/vcshost/events/${projectId}`, next, {
    'x-github-event': 'push',
    'x-github-delivery': '33333333-cccc-4000-8000-000000000003',
    'x-hub-signature-256': hubSignature(secret, next),
  });
  t.is(other.statusCode, 201, JSON.stringify(other.body));
  t.is((await events()).length, 2);
  // The same move made again later (a tag deleted and pushed again at its commit) is a new push: the host's pushed_at differs.
  const body = push('refs/heads/replayed');
  const again = JSON.stringify({ ...body, repository: { ...body.repository, pushed_at: body.repository.pushed_at + 60 } });
  const repeat = await deliver(s.server, `/integrations/vcshost/events/${projectId}`, again, {
    'x-github-event': 'push',
    'x-github-delivery': '44444444-dddd-4000-8000-000000000004',
    'x-hub-signature-256': hubSignature(secret, again),
  });
  t.is(repeat.statusCode, 201, JSON.stringify(repeat.body));
  t.is((await events()).length, 3);
});

test.serial('the same signed pull_request body sent again with another delivery id makes no second event; a new event of the same kind does', async (t) => {
  const secret = 'input-rules-webhook-secret'; // set by the push test above
  let n = 0;
  const send = (body: unknown) => {
    const raw = JSON.stringify(body);
    return deliver(s.server, `/integrations/vcshost/events/${projectId}`, raw, {
      'x-github-event': 'pull_request',
      'x-github-delivery': `55555555-eeee-4000-8000-${String(++n).padStart(12, '0')}`,
      'x-hub-signature-256': hubSignature(secret, raw),
    });
  };
  const events = async () => (await s.kernel.db('events').where({ project_id: projectId, type: 'vcshost.pull_request' })).length;
  const opened = pullRequest('opened', 501);
  const first = await send(opened);
  t.is(first.statusCode, 201, JSON.stringify(first.body));
  const replay = await send(opened);
  t.is(replay.statusCode, 200, 'answered like a redelivery');
  t.is(replay.body.id, first.body.id, 'with the first event');
  t.is(await events(), 1, 'one event');
  // The same body with keys in another order is the same event too (the identity is read, not the bytes).
  const { sender, ...rest } = opened;
  t.is((await send({ sender, ...rest })).statusCode, 200);
  t.is(await events(), 1);

  // Genuine events of the same PR each count: another action, a new head (synchronize), a later
  // update of the same kind (edited twice), a second label added at the same moment as the first.
  const pr = opened.pull_request;
  const later = (body: ReturnType<typeof pullRequest>, updated_at: string, extra: Record<string, unknown> = {}) => ({
    ...body,
    ...extra,
    pull_request: { ...body.pull_request, updated_at },
  });
  const fresh = [
    pullRequest('closed', 501),
    { ...pullRequest('synchronize', 501), pull_request: { ...pr, head: { ...pr.head, sha: 'd'.repeat(40) }, updated_at: '2024-06-10T09:00:00Z' } },
    later(pullRequest('edited', 501), '2024-06-10T09:30:00Z', { changes: { title: { from: 'Add the new module' } } }),
    later(pullRequest('edited', 501), '2024-06-10T09:45:00Z', { changes: { body: { from: 'Adds src/new.ts.' } } }),
    later(pullRequest('labeled', 501), '2024-06-10T10:00:00Z', { label: { id: 1, name: 'bug' } }),
    later(pullRequest('labeled', 501), '2024-06-10T10:00:00Z', { label: { id: 2, name: 'urgent' } }),
    pullRequest('opened', 502),
  ];
  for (const body of fresh) t.is((await send(body)).statusCode, 201, `${body.action} of #${body.number}`);
  t.is(await events(), 1 + fresh.length);
  for (const body of fresh) t.is((await send(body)).statusCode, 200, `the replay of ${body.action} of #${body.number}`);
  t.is(await events(), 1 + fresh.length, 'no replay made an event');
});

// 5. A trickled body: 408 after server.body_timeout_ms, over a real socket.

/** Sends `head` then one body byte a second; resolves with what the server answered and when. */
function trickle(port: number, head: string, maxMs: number): Promise<{ status: number | null; ms: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      clearInterval(timer);
      clearTimeout(limit);
      socket.destroy();
      const match = /^HTTP\/1\.1 (\d{3})/.exec(answer);
      resolve({ status: match ? Number(match[1]) : null, ms: Date.now() - started });
    };
    const limit = setTimeout(done, maxMs);
    socket.on('connect', () => {
      socket.write(head);
      timer = setInterval(() => socket.writable && socket.write('{'), 1000);
    });
    socket.on('data', (d) => {
      answer += d.toString('latin1');
      if (/\r\n\r\n/.test(answer)) done();
    });
    socket.on('error', () => done());
    socket.on('close', () => done());
  });
}

test.serial('an authenticated body trickled at a byte a second is 408 after server.body_timeout_ms; a normal request still works', async (t) => {
  const slow = await startTestServer({ overrides: { roles: ['api'], server: { body_timeout_ms: 2000 } } });
  try {
    const token = (await bootstrapAdmin(slow.server)).token;
    const port = Number(new URL(slow.url).port);
    const head = [
      'POST /orgs HTTP/1.1',
      'Host: 127.0.0.1',
      `Authorization: Bearer ${token}`,
      'Content-Type: application/json',
      'Content-Length: 1000',
      '',
      '',
    ].join('\r\n');
    const { status, ms } = await trickle(port, head, 8000);
    t.is(status, 408, `answered ${status} after ${ms} ms`);
    t.true(ms < 5000, `within a few seconds (${ms} ms)`);
    const ok = await fetch(`${slow.url}/orgs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Quick' }),
    });
    t.is(ok.status, 201);
  } finally {
    await slow.stop();
  }
});
