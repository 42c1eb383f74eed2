/**
 * Issue 29, item 1: system secrets hold the platform's own credentials (the chat signing secret,
 * the code-host webhook secret, registry credentials). A job of any org used to resolve them
 * (project, user, org, then system), so an ordinary org admin could print one past the masking
 * (reversed) and sign chat events for every tenant. Now a system secret reaches a job only when a
 * system admin marks it `shared_with_jobs`, and svc's own integration secrets can never be marked.
 *
 * The attack is refused at the attempt, not at job creation (secrets are resolved when the job
 * runs, under the scopes of its project and creator): the attempt fails with a message saying the
 * secret exists only at system scope and is not shared with jobs, before any of the job runs, and
 * the value appears nowhere (attempt, job, stored log lines, server log) in any form. The same rule
 * holds for what a tenant points elsewhere: git credentials, and an org's own inference target.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { createLogger } from '../../core/logger.ts';
import { as, call, userInOrg } from '../support/server.ts';
import { attemptsOf, finished, logLines, workerWorld, type WorkerWorld } from '../worker/helpers.ts';
import { chat, managed, target, teardown, world } from '../inference/helpers.ts';

let w: WorkerWorld;
let orgAdmin: ReturnType<typeof as>;
let orgAdminToken: string;
const serverLog: string[] = [];

const SIGNING = `chat-signing-${randomBytes(16).toString('hex')}`;
/** Every form a script could print it in to get past the masking of the literal value. */
const forms = (value: string) => [
  value,
  [...value].reverse().join(''),
  Buffer.from(value).toString('base64'),
  Buffer.from(value).toString('hex'),
  Buffer.from([...value].reverse().join('')).toString('base64'),
  // A fragment long enough to matter, whichever half a script prints.
  value.slice(0, 20),
  value.slice(-20),
  [...value.slice(-20)].reverse().join(''),
];
/** Prints $SIG reversed, base64, hex and in halves. */
const EXFILTRATE = [
  `printf '%s' "$SIG" | rev; echo`,
  `printf '%s' "$SIG" | base64 -w0; echo`,
  `printf '%s' "$SIG" | od -An -tx1 | tr -d ' \\n'; echo`,
  `printf '%s' "$SIG" | cut -c1-20`,
  `printf '%s' "$SIG" | rev | cut -c1-20`,
].join('\n');

const NOT_SHARED = (name: string) => `secret ${name} exists only at system scope and is not shared with jobs; a system admin can set shared_with_jobs`;

test.before(async () => {
  const sink = new Writable({ write: (chunk, _enc, done) => (serverLog.push(String(chunk)), done()) });
  w = await workerWorld('syssec', { logger: createLogger('debug', sink) });
  orgAdminToken = await userInOrg(w.srv.server, w.token, w.orgId, 'org-admin@example.com', 'admin');
  orgAdmin = as(w.srv.server, orgAdminToken);
});
test.after.always(() => w?.stop());

const put = (url: string, payload: unknown, token = w.token) => call(w.srv.server, 'PUT', url, payload, token);

/** A script job created by `client` (the org admin unless told), run to its end: the job, its attempt, its log lines. */
async function runJob(run: string, env_overrides: Record<string, string>, client = orgAdmin, projectId = w.projectId) {
  const res = await client.post(`/projects/${projectId}/jobs`, { description: 'secrets', env_overrides, hints: { step: { kind: 'script', script: { run } } } });
  if (res.statusCode !== 201) throw new Error(`job: ${res.statusCode} ${JSON.stringify(res.body)}`);
  const job = await finished(w, res.body.id);
  const [attempt] = await attemptsOf(w, job.id, projectId);
  return { job, attempt, lines: await logLines(w, job.id, attempt.id) };
}

const stdout = (lines: any[]) => lines.filter((l) => l.stream === 'stdout').map((l) => l.line);

test.serial('an org admin cannot read the chat signing secret through a job, in any form', async (t) => {
  t.is((await orgAdmin.get('/system/secrets')).statusCode, 403, 'the org admin is not a system admin');
  t.is((await w.api.post('/system/secrets', { name: 'CHATAPP_SIGNING_SECRET', value: SIGNING })).statusCode, 201);

  const { job, attempt, lines } = await runJob(EXFILTRATE, { SIG: '${secret.CHATAPP_SIGNING_SECRET}' });
  t.is(attempt.status, 'failed');
  t.is(
    attempt.error,
    "env_overrides.SIG: secret CHATAPP_SIGNING_SECRET exists only at system scope and is not shared with jobs; it is one of svc's own integration secrets, which never reach jobs",
  );
  t.deepEqual(stdout(lines), [], 'nothing of the script ran');

  const stored = (await w.srv.kernel.db('attempt_logs').where({ attempt_id: attempt.id }).pluck('line')).join('\n');
  const everything = [JSON.stringify(job), JSON.stringify(attempt), JSON.stringify(lines), stored, serverLog.join('')].join('\n');
  for (const form of forms(SIGNING)) t.false(everything.includes(form), `found ${form}`);
});

test.serial('an integration secret stays out of jobs even if its row were marked shared behind the API', async (t) => {
  await w.srv.kernel.db('secrets').where({ scope: 'system', name: 'CHATAPP_SIGNING_SECRET' }).update({ shared_with_jobs: true });
  try {
    const { attempt, lines } = await runJob(EXFILTRATE, { SIG: '${secret.CHATAPP_SIGNING_SECRET}' });
    t.is(attempt.status, 'failed');
    t.regex(attempt.error, /CHATAPP_SIGNING_SECRET exists only at system scope and is not shared with jobs; it is one of svc's own integration secrets/);
    for (const form of forms(SIGNING)) t.false(JSON.stringify([attempt, lines]).includes(form));
  } finally {
    await w.srv.kernel.db('secrets').where({ scope: 'system', name: 'CHATAPP_SIGNING_SECRET' }).update({ shared_with_jobs: false });
  }
});

test.serial('a system secret is not shared with jobs by default, and the metadata says so', async (t) => {
  const created = await w.api.post('/system/secrets', { name: 'TEAM_MODEL_KEY', value: `model-key-${randomBytes(8).toString('hex')}` });
  t.is(created.statusCode, 201);
  t.is(created.body.shared_with_jobs, false);
  t.false(JSON.stringify(created.body).includes('model-key-'));
  const { attempt } = await runJob('echo "[$K]"', { K: '${secret.TEAM_MODEL_KEY}' });
  t.is(attempt.status, 'failed');
  t.is(attempt.error, `env_overrides.K: ${NOT_SHARED('TEAM_MODEL_KEY')}`);
});

test.serial('a system secret a system admin marks shared_with_jobs resolves into any org’s job, masked', async (t) => {
  const value = `shared-key-${randomBytes(8).toString('hex')}`;
  const created = await w.api.post('/system/secrets', { name: 'SHARED_MODEL_KEY', value, shared_with_jobs: true });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  t.is(created.body.shared_with_jobs, true);
  t.is((await w.api.get('/system/secrets/SHARED_MODEL_KEY')).body.shared_with_jobs, true);
  const listed = (await w.api.get('/system/secrets')).body.data.find((s: any) => s.name === 'SHARED_MODEL_KEY');
  t.is(listed.shared_with_jobs, true);

  const { job, lines } = await runJob(`[ "$K" = '${value}' ] && echo same; echo "[$K]"`, { K: '${secret.SHARED_MODEL_KEY}' });
  t.is(job.phase, 'done', JSON.stringify(lines));
  t.deepEqual(stdout(lines), ['same', '[***]']);

  // Flag only (the value stays), then back off: the next job no longer gets it.
  const off = await put('/system/secrets/SHARED_MODEL_KEY', { shared_with_jobs: false });
  t.is(off.statusCode, 200, JSON.stringify(off.body));
  t.is(off.body.shared_with_jobs, false);
  const after = await runJob('echo "[$K]"', { K: '${secret.SHARED_MODEL_KEY}' });
  t.is(after.attempt.error, `env_overrides.K: ${NOT_SHARED('SHARED_MODEL_KEY')}`);

  // Replacing the value without the flag keeps the flag as it is.
  t.is((await put('/system/secrets/SHARED_MODEL_KEY', { shared_with_jobs: true })).body.shared_with_jobs, true);
  const replaced = await put('/system/secrets/SHARED_MODEL_KEY', { value: `${value}-2` });
  t.is(replaced.body.shared_with_jobs, true);
  const again = await runJob(`[ "$K" = '${value}-2' ] && echo same`, { K: '${secret.SHARED_MODEL_KEY}' });
  t.deepEqual(stdout(again.lines), ['same']);
});

for (const name of ['CHATAPP_SIGNING_SECRET', 'VCSHOST_WEBHOOK_SECRET', 'REGISTRY_USERNAME', 'REGISTRY_PASSWORD']) {
  test.serial(`svc's own integration secret ${name} cannot be marked shared_with_jobs (422 naming the field)`, async (t) => {
    const fresh =
      name === 'CHATAPP_SIGNING_SECRET'
        ? null
        : await w.api.post('/system/secrets', { name, value: `v-${randomBytes(8).toString('hex')}`, shared_with_jobs: true });
    if (fresh) {
      t.is(fresh.statusCode, 422);
      t.regex(fresh.body.message, new RegExp(`^shared_with_jobs: ${name} is one of svc's own integration secrets`));
      t.is((await w.api.get(`/system/secrets/${name}`)).statusCode, 404, 'nothing was created');
      t.is((await w.api.post('/system/secrets', { name, value: `v-${randomBytes(8).toString('hex')}` })).statusCode, 201);
    }
    const update = await put(`/system/secrets/${name}`, { shared_with_jobs: true });
    t.is(update.statusCode, 422);
    t.regex(update.body.message, /^shared_with_jobs: /);
    t.is((await w.api.get(`/system/secrets/${name}`)).body.shared_with_jobs, false);
    t.is((await put(`/system/secrets/${name}`, { shared_with_jobs: false })).statusCode, 200, 'false is always accepted');
  });
}

test.serial('only a system admin can set shared_with_jobs; other scopes have no such flag', async (t) => {
  const forbidden = await orgAdmin.post('/system/secrets', { name: 'SNEAKY', value: 'sneaky-value-123456', shared_with_jobs: true });
  t.is(forbidden.statusCode, 403);
  t.is((await put('/system/secrets/SHARED_MODEL_KEY', { shared_with_jobs: false }, orgAdminToken)).statusCode, 403);
  t.is((await w.api.get('/system/secrets/SHARED_MODEL_KEY')).body.shared_with_jobs, true, 'unchanged');
  for (const base of [`/orgs/${w.orgId}/secrets`, `/projects/${w.projectId}/secrets`]) {
    const res = await orgAdmin.post(base, { name: 'ORG_FLAGGED', value: 'org-value-123456', shared_with_jobs: true });
    t.is(res.statusCode, 400, JSON.stringify(res.body));
    t.regex(res.body.message, /shared_with_jobs/);
  }
});

test.serial('org and project secrets still reach their own jobs, and win over an unshared system secret of the name', async (t) => {
  const orgValue = `org-value-${randomBytes(8).toString('hex')}`;
  const projectValue = `project-value-${randomBytes(8).toString('hex')}`;
  t.is((await orgAdmin.post(`/orgs/${w.orgId}/secrets`, { name: 'ORG_KEY', value: orgValue })).statusCode, 201);
  t.is((await orgAdmin.post(`/projects/${w.projectId}/secrets`, { name: 'PROJECT_KEY', value: projectValue })).statusCode, 201);
  t.is((await w.api.post('/system/secrets', { name: 'ORG_KEY', value: 'system-loses-123456' })).statusCode, 201);
  const org = await orgAdmin.get(`/orgs/${w.orgId}/secrets/ORG_KEY`);
  t.false('shared_with_jobs' in org.body, 'the flag is a system secret’s only');
  const { job, lines } = await runJob(`[ "$O" = '${orgValue}' ] && [ "$P" = '${projectValue}' ] && echo both`, {
    O: '${secret.ORG_KEY}',
    P: '${secret.PROJECT_KEY}',
  });
  t.is(job.phase, 'done', JSON.stringify(lines));
  t.deepEqual(stdout(lines), ['both']);
});

// The clone's message is core/git-access.ts's "no secret GIT_TOKEN was found" (a not-shared secret is missing for the job).
test.serial("a job's git token found only at system scope, unshared, is not used for the clone", async (t) => {
  const token = `ghp-${randomBytes(12).toString('hex')}`;
  t.is((await w.api.post('/system/secrets', { name: 'GIT_TOKEN', value: token, type: 'code_host_token' })).statusCode, 201);
  const project = await w.api.post('/projects', { org_id: w.orgId, name: 'syshttps', slug: 'syshttps', repo_url: 'https://git.invalid/team/app.git' });
  t.is(project.statusCode, 201);
  const { attempt } = await runJob('echo never', {}, orgAdmin, project.body.id);
  t.is(attempt.status, 'failed');
  t.regex(attempt.error, /^cloning https:\/\/git\.invalid\/team\/app\.git over HTTPS needs a token, and no secret GIT_TOKEN was found/);
  t.false(JSON.stringify(attempt).includes(token));
});

// The inference proxy: svc calls a system target with a system key itself (the key never leaves the
// server), but an org's own target is called at the base URL the org chose, so it is treated like a job.
test.serial("an org admin's own inference target cannot carry an unshared system secret to its host; a system target still uses one", async (t) => {
  const inf = await world();
  try {
    const signing = `chat-signing-${randomBytes(16).toString('hex')}`;
    t.is((await inf.admin.post('/system/secrets', { name: 'CHATAPP_SIGNING_SECRET', value: signing })).statusCode, 201);
    const orgAdminApi = as(inf.ctx.srv.server, inf.orgAdmin.token);
    const exfil = await target(
      inf,
      { org_id: inf.org, name: 'exfil', kind: 'openai', base_url: `${inf.fake.url}/v1`, credential_secret: 'CHATAPP_SIGNING_SECRET' },
      orgAdminApi,
    );
    await managed(inf, { org_id: inf.org, name: 'loot', target_id: exfil.id, upstream_model: 'gpt-fake-1' }, orgAdminApi);
    const messages = [{ role: 'user', content: 'hi' }];
    const refused = await chat(inf, inf.orgAdmin.token, { model: 'managed/loot', messages }, { 'x-svc-org': inf.org });
    t.is(refused.statusCode, 422, refused.raw);
    t.regex(refused.body.message, /CHATAPP_SIGNING_SECRET exists only at system scope and is not shared with jobs; it is one of svc's own integration secrets/);
    for (const form of forms(signing)) t.false(JSON.stringify(inf.fake.calls).includes(form), 'the upstream never saw it');

    // FAKE_KEY is a system secret nobody shared: svc's own system target still calls with it.
    t.is((await inf.admin.get('/system/secrets/FAKE_KEY')).body.shared_with_jobs, false);
    const sys = await target(inf, { name: 'sys-ai', kind: 'openai', base_url: `${inf.fake.url}/v1`, credential_secret: 'FAKE_KEY' });
    await managed(inf, { name: 'fast', target_id: sys.id, upstream_model: 'gpt-fake-1' });
    const served = await chat(inf, inf.member.token, { model: 'managed/fast', messages }, { 'x-svc-org': inf.org });
    t.is(served.statusCode, 200, served.raw);
    t.is(inf.fake.calls.at(-1)!.headers.authorization, `Bearer ${inf.fake.apiKey}`);
  } finally {
    await teardown(inf);
  }
});
