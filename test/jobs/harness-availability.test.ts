import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { HarnessAvailabilityToken, type HarnessReport } from '../../core/ports/harness.ts';
import { Tokens } from '../../core/tokens.ts';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { attemptsOf, finished, logLines, until, workerWorld, type WorkerWorld } from '../worker/helpers.ts';

/**
 * Issue 34 item 9: a job whose harness no worker can run is refused at create (422 naming the
 * harness and what it lacks), not accepted and failed a second later. The rule reads the workers'
 * reports (harness_reports) through the harnesses domain. Most tests here drive the reports through
 * the port on an API-only server; the last one runs a real worker role that gains its CLI.
 */
const FAKE_CLAUDE = path.resolve('test/fixtures/bin/fake-claude');

let s: TestServer;
let api: ReturnType<typeof as>;
let projectId = '';

test.before(async () => {
  s = await startTestServer();
  const { token } = await bootstrapAdmin(s.server);
  api = as(s.server, token);
  const orgId = (await api.post('/orgs', { name: 'Harness Org' })).body.id;
  projectId = (await api.post('/projects', { org_id: orgId, name: 'Avail', slug: 'avail' })).body.id;
});
test.after.always(() => s?.stop());

const availability = () => s.kernel.container.resolve(HarnessAvailabilityToken);
const db = () => s.kernel.container.resolve(Tokens.Db);
const report = (workerId: string, harnesses: Record<string, HarnessReport>, freshSeconds = 60) => availability().report({ workerId, harnesses, freshSeconds });
const create = (body: Record<string, unknown>) => api.post(`/projects/${projectId}/jobs`, { description: 'Fix it', ...body });
const countJobs = async () => Number((await db()('jobs').count({ n: '*' }).first())!.n);

const noBinary = (command: string): HarnessReport => ({ available: false, missing: 'binary', command, reason: `binary '${command}' not found on PATH` });
const noCredentials = (command: string, present?: string[]): HarnessReport => ({
  available: false,
  missing: 'credentials',
  command,
  reason: 'no credentials: set …',
  ...(present ? { present } : {}),
});
const ready = (command: string): HarnessReport => ({ available: true, command, reason: `/usr/bin/${command} found; credentials from the environment` });

async function clearReports() {
  await db()('harness_reports').delete();
}

test.serial('with no worker reported at all, a job for any harness is accepted (workers may come later)', async (t) => {
  await clearReports();
  const res = await create({ harness: 'harness_b' });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
});

test.serial('no reporting worker has the binary: 422 naming the harness and the binary, and nothing is written', async (t) => {
  await clearReports();
  await report('w1', { harness_b: noBinary('claude'), harness_d: ready('codex') });
  const before = await countJobs();
  const res = await create({ harness: 'harness_b' });
  t.is(res.statusCode, 422);
  t.is(res.body.error, 'Unprocessable Entity');
  t.regex(
    res.body.message,
    /^harness_b cannot run on any worker: the claude binary was not found on PATH \(1 worker reported; docs\/harnesses\.md, "Refused at create"\)$/,
  );
  t.is(await countJobs(), before);
  // A job naming no harness runs the server's default, harness_b: refused the same way.
  const byDefault = await create({});
  t.is(byDefault.statusCode, 422);
  t.regex(byDefault.body.message, /^harness_b cannot run on any worker/);
  // The alias resolves to its harness; another harness the worker has is accepted.
  t.is((await create({ harness: 'harness_d' })).statusCode, 201);
  // Scripts run no harness.
  t.is((await create({ hints: { step: { kind: 'script', script: { run: 'true' } } } })).statusCode, 201);
});

test.serial(
  'a worker with the binary but no credential: 422 naming the credential variables; a job secret, a managed model or the worker environment supply it',
  async (t) => {
    await clearReports();
    await report('w1', { harness_d: noCredentials('codex') });
    const res = await create({ harness: 'harness_d' });
    t.is(res.statusCode, 422);
    t.regex(
      res.body.message,
      /^harness_d cannot run on any worker: no credential OPENAI_API_KEY or CODEX_API_KEY \(not in a worker's environment or login files, nor among the job's secrets\)/,
    );
    // A managed model brings its own credential: the binary is enough.
    t.is((await create({ harness: 'harness_d', model: 'managed/small' })).statusCode, 201);
    // The job's project holds the key as a secret: the worker gets it for the job.
    const secret = await api.post(`/projects/${projectId}/secrets`, { name: 'CODEX_API_KEY', value: 'sk-codex-0123456789abcdef' });
    t.is(secret.statusCode, 201, JSON.stringify(secret.body));
    t.is((await create({ harness: 'harness_d' })).statusCode, 201);
    t.is((await api.delete(`/projects/${projectId}/secrets/CODEX_API_KEY`)).statusCode, 204);
    t.is((await create({ harness: 'harness_d' })).statusCode, 422);
    // One variable of a two-variable group in the worker's environment, the other a job secret (harness_c's gateway).
    await report('w1', { harness_c: noCredentials('claude', ['ANTHROPIC_BASE_URL']) });
    t.is((await create({ harness: 'harness_c' })).statusCode, 422);
    t.is((await api.post(`/projects/${projectId}/secrets`, { name: 'ANTHROPIC_AUTH_TOKEN', value: 'gateway-token-0123456789' })).statusCode, 201);
    t.is((await create({ harness: 'harness_c' })).statusCode, 201);
  },
);

test.serial('accepted when one reporting worker can run the harness, though others cannot', async (t) => {
  await clearReports();
  await report('w1', { harness_b: noBinary('claude') });
  await report('w2', { harness_b: noCredentials('claude') });
  const refused = await create({ harness: 'harness_b' });
  t.is(refused.statusCode, 422);
  // The closest worker's lack is named: one has the binary, so it is the credential.
  t.regex(
    refused.body.message,
    /^harness_b cannot run on any worker: no credential ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN or CLAUDE_CODE_OAUTH_REFRESH_TOKEN .*\(2 workers reported/,
  );
  await report('w3', { harness_b: ready('claude') });
  t.is((await create({ harness: 'harness_b' })).statusCode, 201);
  // A worker that stops withdraws its report.
  await availability().withdraw('w3');
  t.is((await create({ harness: 'harness_b' })).statusCode, 422);
});

test.serial('stale reports are ignored: one that ran out while remembered, and one the database holds expired', async (t) => {
  await clearReports();
  await report('short', { harness_b: noBinary('claude') }, 1);
  t.is((await create({ harness: 'harness_b' })).statusCode, 422);
  await new Promise((r) => setTimeout(r, 1100));
  t.is((await create({ harness: 'harness_b' })).statusCode, 201, 'no fresh report: nothing is known');
  // An expired row that could run it does not count beside a fresh one that cannot.
  await db()('harness_reports').insert({
    worker_id: 'old',
    harnesses: JSON.stringify({ harness_b: ready('claude') }),
    expires_at: new Date(Date.now() - 5000),
  });
  await report('fresh', { harness_b: noBinary('claude') });
  t.is((await create({ harness: 'harness_b' })).statusCode, 422);
});

test.serial('a harness no reporting worker knows, and profiles: refused only when no entry can run, naming each', async (t) => {
  await clearReports();
  await report('w1', { harness_b: noBinary('claude'), harness_d: noCredentials('codex') });
  const unknown = await create({ harness: 'harness_f' });
  t.is(unknown.statusCode, 422);
  t.regex(unknown.body.message, /^harness_f cannot run on any worker: no worker has this harness/);
  const sync = await api.post(`/projects/${projectId}/manifest`, {
    yaml: `
x-svc:
  agents:
    version: 1
    profiles:
      default: [{ harness: harness_b }, { harness: harness_d }]
      codex: [{ harness: harness_d }]
`,
  });
  t.is(sync.statusCode, 200, JSON.stringify(sync.body));
  const none = await create({});
  t.is(none.statusCode, 422);
  t.regex(
    none.body.message,
    /^no harness of profile 'default' can run on any worker: harness_b: the claude binary was not found on PATH; harness_d: no credential OPENAI_API_KEY or CODEX_API_KEY/,
  );
  t.is((await create({ harness_profile: 'codex' })).statusCode, 422);
  await report('w2', { harness_d: ready('codex') });
  t.is((await create({})).statusCode, 201, 'the fallback entry can run');
  t.is((await create({ harness_profile: 'codex' })).statusCode, 201);
  await api.post(`/projects/${projectId}/manifest`, { yaml: 'x-svc: {}\n' });
});

test.serial('planned work is checked when it moves to ready; a workflow is refused before any of its jobs is written', async (t) => {
  await clearReports();
  await report('w1', { harness_b: noBinary('claude') });
  const idea = await create({ harness: 'harness_b', phase: 'backlog' });
  t.is(idea.statusCode, 201, 'not planned to run yet');
  const moved = await api.patch(`/jobs/${idea.body.id}`, { phase: 'ready' });
  t.is(moved.statusCode, 422);
  t.regex(moved.body.message, /^harness_b cannot run on any worker/);
  t.is((await api.get(`/jobs/${idea.body.id}`)).body.phase, 'backlog');

  const sync = await api.post(`/projects/${projectId}/manifest`, {
    yaml: `
workflows:
  review:
    steps:
      - { name: lint, run: echo lint }
      - name: look
        agent: { name: reviewer, harness: harness_b }
        depends_on: [lint]
`,
  });
  t.is(sync.statusCode, 200, JSON.stringify(sync.body));
  const before = await countJobs();
  const invoked = await api.post(`/projects/${projectId}/workflows/review/invoke`, {});
  t.is(invoked.statusCode, 422);
  t.regex(invoked.body.message, /^step 'look' of workflow review cannot be created: harness_b cannot run on any worker: the claude binary was not found/);
  t.is(await countJobs(), before);
  await report('w1', { harness_b: ready('claude') });
  t.is((await api.post(`/projects/${projectId}/workflows/review/invoke`, {})).statusCode, 201);
});

/** A real worker role whose configured CLI is missing at first: it reports so, then gains it. */
let w: WorkerWorld | undefined;
// Readable by the user attempts run as (mkdtemp makes it private to the test's own).
const binDir = mkdtempSync(path.join(tmpdir(), 'svc-gains-'));
chmodSync(binDir, 0o755);
test.after.always(async () => {
  await w?.stop();
  rmSync(binDir, { recursive: true, force: true });
});

test.serial('a worker that gains the binary makes create succeed after its next report, and the job runs', async (t) => {
  const cli = path.join(binDir, 'claude');
  process.env.ANTHROPIC_API_KEY = 'sk-ant-test-key';
  w = await workerWorld('gains', {
    overrides: { worker: { harness_report_seconds: 0.3 }, harnesses: { harness_b: { command: cli } } },
  });
  const refused = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'Note the change', harness: 'harness_b' });
  t.is(refused.statusCode, 422);
  t.is(refused.body.message, `harness_b cannot run on any worker: the ${cli} binary was not found (1 worker reported; docs/harnesses.md, "Refused at create")`);
  t.false(existsSync(cli));
  symlinkSync(FAKE_CLAUDE, cli);
  const accepted = await until(
    async () => {
      const res = await w!.api.post(`/projects/${w!.projectId}/jobs`, { description: 'Note the change', harness: 'harness_b' });
      return res.statusCode === 201 ? res : null;
    },
    'create to be accepted once the worker reports its CLI',
    30_000,
  );
  const job = await finished(w, accepted.body.id, 60_000);
  const [attempt] = await attemptsOf(w, job.id);
  t.is(job.phase, 'done', JSON.stringify((await logLines(w, job.id, attempt.id)).map((l) => l.line)));
});
