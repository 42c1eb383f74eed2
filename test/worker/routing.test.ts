import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../core/db/embedded.ts';
import { SigningKeys } from '../../core/auth/signing-keys.ts';
import { DispatchTokens } from '../../plugins/worker/dispatch-token.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { call } from '../support/server.ts';
import { alive, attemptsOf, finished, logLines, scriptJob, until, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * Worker routing with two real processes on one database: this test process runs api, orchestrator
 * and worker with SVC_WORKER_URLS naming `python-worker`, and `svc serve --roles worker` runs as a
 * child process at that address. A script prints its parent pid, the process that ran it.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TEST_CONFIG = fileURLToPath(new URL('../../config/test.yaml', import.meta.url));

let db: TestDatabase;
let w: WorkerWorld;
let remotePort: number;
let remoteScratch: string;
let remote: { child: ChildProcess; output: () => string; exited: Promise<number | null> } | null = null;

/** `svc serve --roles worker` on `remotePort`, two attempts at a time. */
async function startRemote(): Promise<NonNullable<typeof remote>> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'core/main.ts', 'serve', '--roles', 'worker'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH!,
      HOME: process.env.HOME ?? '/root',
      SVC_CONFIG: TEST_CONFIG,
      SVC_LOG_LEVEL: 'warn',
      DATABASE_URL: db.url,
      PORT: String(remotePort),
      SVC_DATA_DIR: path.join(remoteScratch, 'data'),
      // test/support/server.ts derives the master key from the database URL; replicas share it.
      SVC_SECRETS_MASTER_KEY: createHash('sha256').update(db.url).digest('hex'),
      SVC_WORKSPACE_ROOT: path.join(remoteScratch, 'workspaces'),
      SVC_WORKER__CONCURRENCY: '2',
      SVC_WORKER__HEARTBEAT_SECONDS: '1',
      SVC_WORKER__LOG_FLUSH_MS: '20',
      // The jobs here say which worker ran them by $PPID and wait on gate files in the scratch folder:
      // both need the host's view, which the attempt sandbox hides (test/security/sandbox.test.ts).
      SVC_SANDBOX: 'off',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  await until(
    async () => {
      if (gone) throw new Error(`the remote worker exited: ${output}`);
      return (await fetch(`http://127.0.0.1:${remotePort}/worker/capacity`).catch(() => null))?.status === 401;
    },
    'the remote worker to listen',
    90_000,
  );
  return { child, output: () => output, exited };
}

async function stopRemote(): Promise<void> {
  if (!remote) return;
  remote.child.kill('SIGTERM');
  await remote.exited;
  remote = null;
}

test.before(async () => {
  db = await createTestDatabase();
  remotePort = await freePort();
  remoteScratch = mkdtempSync(path.join(tmpdir(), 'svc-remote-worker-'));
  w = await workerWorld('wroute', {
    database: db,
    overrides: { worker: { urls: { 'python-worker': `http://127.0.0.1:${remotePort}` }, dispatch_retry_ms: 200, sandbox: { mode: 'off' } } },
  });
  remote = await startRemote();
});
test.after.always(async () => {
  await stopRemote();
  await w?.stop();
  await db?.drop();
  if (remoteScratch) rmSync(remoteScratch, { recursive: true, force: true });
});

const SHOW_WHERE = [
  'echo "ppid=$PPID"',
  'pwd',
  // the job's API address and token work wherever it runs
  `node -e "fetch(process.env.SVC_API_URL + '/jobs/' + process.env.SVC_JOB_ID, {headers: {authorization: 'Bearer ' + process.env.SVC_JOB_TOKEN}}).then((r) => console.log('api', r.status))"`,
].join('\n');

async function stdoutOf(jobId: string): Promise<string[]> {
  const attempts = await attemptsOf(w, jobId);
  const last = attempts.sort((a, b) => b.attempt_number - a.attempt_number)[0];
  return (await logLines(w, jobId, last.id)).filter((l) => l.stream === 'stdout').map((l) => l.line);
}

test.serial('a job with hints.worker_type python-worker runs on the worker process SVC_WORKER_URLS names', async (t) => {
  const id = await scriptJob(w, SHOW_WHERE, { worker_type: 'python-worker' });
  const job = await finished(w, id, 60_000);
  t.is(job.phase, 'done', remote!.output());
  const out = await stdoutOf(id);
  t.is(out[0], `ppid=${remote!.child.pid}`, 'the script ran under the remote worker process');
  t.true(out[1].startsWith(path.join(remoteScratch, 'workspaces')), out[1]);
  t.is(out[2], 'api 200', 'SVC_API_URL is the API the orchestrator suggested');
});

test.serial('a job without a worker type (or with `default`) runs in this process', async (t) => {
  for (const hints of [{}, { worker_type: 'default' }]) {
    const id = await scriptJob(w, SHOW_WHERE, hints);
    const job = await finished(w, id, 60_000);
    t.is(job.phase, 'done');
    const out = await stdoutOf(id);
    t.is(out[0], `ppid=${process.pid}`);
    t.true(out[1].startsWith(path.join(w.scratch, 'workspaces')), out[1]);
    t.is(out[2], 'api 200');
  }
});

test.serial('a worker type absent from SVC_WORKER_URLS fails the job at once, naming the type, without retrying', async (t) => {
  const id = await scriptJob(w, 'echo never', { worker_type: 'rust-worker', max_attempts: 3 });
  const job = await finished(w, id);
  t.is(job.phase, 'cancelled');
  const expected = "worker type 'rust-worker' is not configured (SVC_WORKER_URLS has: python-worker)";
  t.is(job.close_reason, `attempt 1 failed (not retried): ${expected}`);
  const attempts = await attemptsOf(w, id);
  t.is(attempts.length, 1);
  t.like(attempts[0], { status: 'failed', error: expected, result_status: 'failed' });
  const lines = await logLines(w, id, attempts[0].id);
  t.deepEqual(
    lines.map((l) => [l.stream, l.line]),
    [['system', `failed: ${expected}`]],
  );
  const failed = await w.srv.kernel.db('events').where({ type: 'system.job.failed' }).whereRaw("payload_json->>'job_id' = ?", [id]).first();
  t.truthy(failed, 'system.job.failed is emitted');
});

test.serial("the dispatch routes take only an orchestrator's dispatch token for that attempt", async (t) => {
  const base = `http://127.0.0.1:${remotePort}`;
  const tokens = new DispatchTokens(w.srv.kernel.container.resolve(SigningKeys));
  const attemptId = '00000000-0000-4000-8000-000000000001';
  const body = {
    job_id: 'job-x',
    project_id: w.projectId,
    attempt_id: attemptId,
    attempt_number: 1,
    lease_token: 'x',
    lease_expires_at: new Date().toISOString(),
  };
  const post = (headers: Record<string, string>, payload: unknown = body) =>
    fetch(`${base}/worker/attempts`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(payload) });
  t.is((await post({})).status, 401);
  t.is((await post({}, { nonsense: true })).status, 401, 'authentication comes before validation');
  t.is((await post({ authorization: 'Bearer not.a.token' })).status, 401);
  t.is((await post({ authorization: `Bearer ${w.token}` })).status, 403, "a user token, even an administrator's, is refused");
  t.is((await post({ authorization: `Bearer ${await tokens.sign('00000000-0000-4000-8000-000000000002')}` })).status, 403, 'a token for another attempt');
  t.is((await post({ authorization: `Bearer ${await tokens.sign('capacity')}` })).status, 403);
  const stale = await post({ authorization: `Bearer ${await tokens.sign(attemptId)}` });
  t.is(stale.status, 409, 'a valid token for an attempt that is not running');
  t.is((await fetch(`${base}/worker/capacity`, { headers: { authorization: `Bearer ${w.token}` } })).status, 403);
  const capacity = await fetch(`${base}/worker/capacity`, { headers: { authorization: `Bearer ${await tokens.sign('capacity')}` } });
  t.deepEqual(await capacity.json(), { capacity: 2 });
  t.is((await fetch(`${base}/orgs`)).status, 404, 'a worker-only process serves dispatch, not the API');
  t.is((await fetch(`${base}/health`)).status, 200, 'but it answers the probes, as every role does');
  t.is((await call(w.srv.server, 'GET', '/orgs', undefined, await tokens.sign('capacity'))).statusCode, 401, 'the API refuses dispatch tokens');
  t.is((await call(w.srv.server, 'POST', '/worker/attempts', body)).statusCode, 401, 'a process with api and worker serves dispatch on its API port');
});

test.serial('a full remote takes no more jobs of its type while other types keep running; its jobs run once it has room', async (t) => {
  const gate = path.join(w.scratch, 'open-remote');
  const hold = `while [ ! -f ${gate} ]; do sleep 0.05; done; echo "ppid=$PPID"`;
  const busy = [await scriptJob(w, hold, { worker_type: 'python-worker' }), await scriptJob(w, hold, { worker_type: 'python-worker' })];
  await until(async () => {
    const jobs = await Promise.all(busy.map(async (id) => (await w.api.get(`/jobs/${id}`)).body.phase));
    return jobs.every((p) => p === 'active');
  }, 'both remote slots to fill');
  const waiting = await scriptJob(w, SHOW_WHERE, { worker_type: 'python-worker' });
  const untyped = await scriptJob(w, SHOW_WHERE);
  t.is((await finished(w, untyped)).phase, 'done', 'the in-process worker is not held up by the full remote');
  const tokens = new DispatchTokens(w.srv.kernel.container.resolve(SigningKeys));
  const attemptId = '00000000-0000-4000-8000-000000000003';
  const full = await fetch(`http://127.0.0.1:${remotePort}/worker/attempts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${await tokens.sign(attemptId)}` },
    body: JSON.stringify({
      job_id: 'job-x',
      project_id: w.projectId,
      attempt_id: attemptId,
      attempt_number: 1,
      lease_token: 'x',
      lease_expires_at: new Date().toISOString(),
    }),
  });
  t.is(full.status, 429, 'a full worker refuses a dispatch');
  t.is((await w.api.get(`/jobs/${waiting}`)).body.phase, 'ready', 'the job for the full remote waits, unclaimed');
  t.deepEqual(await attemptsOf(w, waiting), []);
  writeFileSync(gate, '');
  for (const id of [...busy, waiting]) t.is((await finished(w, id, 60_000)).phase, 'done');
  t.is((await stdoutOf(waiting))[0], `ppid=${remote!.child.pid}`);
  rmSync(gate);
});

test.serial('an in-process worker that is full does not hold up jobs for a remote type', async (t) => {
  const gate = path.join(w.scratch, 'open-local');
  const hold = `while [ ! -f ${gate} ]; do sleep 0.05; done`;
  const local = [await scriptJob(w, hold), await scriptJob(w, hold)]; // worker.concurrency is 2
  await until(
    async () => (await Promise.all(local.map(async (id) => (await w.api.get(`/jobs/${id}`)).body.phase))).every((p) => p === 'active'),
    'the local slots to fill',
  );
  const third = await scriptJob(w, hold);
  const typed = await scriptJob(w, SHOW_WHERE, { worker_type: 'python-worker' });
  t.is((await finished(w, typed, 60_000)).phase, 'done');
  t.is((await w.api.get(`/jobs/${third}`)).body.phase, 'ready', 'the untyped job waits for the full in-process worker');
  t.deepEqual(await attemptsOf(w, third), []);
  writeFileSync(gate, '');
  for (const id of [...local, third]) t.is((await finished(w, id, 60_000)).phase, 'done');
  rmSync(gate);
});

test.serial('cancelling a job that runs on the remote worker kills it there at its next heartbeat (the lease is gone)', async (t) => {
  const pidFile = path.join(w.scratch, 'remote-cancel.pid');
  const id = await scriptJob(w, `sleep 60 & echo $! > ${pidFile}; wait`, { worker_type: 'python-worker' });
  const pid = await until(async () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8').trim()), 'the remote job to start');
  t.is((await w.api.patch(`/jobs/${id}`, { phase: 'cancelled', close_reason: 'not needed' })).statusCode, 200);
  await until(async () => !alive(pid), 'the remote process tree to die', 15_000);
  const [attempt] = await attemptsOf(w, id);
  t.like(attempt, { status: 'cancelled', error: 'job cancelled' });
  const lines = await until(async () => {
    const all = await logLines(w, id, attempt.id);
    return all.some((l) => l.line.startsWith('stopped:')) && all;
  }, 'the remote worker to log the stop');
  t.true(
    lines.some((l) => /^stopped: lease lost/.test(l.line)),
    JSON.stringify(lines),
  );
});

test.serial('an unreachable remote gets the job back, and the job runs once the remote is up again', async (t) => {
  await stopRemote();
  const id = await scriptJob(w, SHOW_WHERE, { worker_type: 'python-worker' });
  // The orchestrator last heard the remote had room, so it claims the job; the dispatch fails and the job goes back.
  const released = await until(async () => {
    const attempts = await attemptsOf(w, id);
    const job = (await w.api.get(`/jobs/${id}`)).body;
    return attempts.length >= 1 && job.phase === 'ready' ? attempts : null;
  }, 'the job to be given back');
  t.like(released[0], { status: 'cancelled', error: 'released' });
  await new Promise((r) => setTimeout(r, 1000));
  t.is((await attemptsOf(w, id)).length, released.length, 'no claims while the remote is unreachable');
  remote = await startRemote();
  const job = await finished(w, id, 60_000);
  t.is(job.phase, 'done');
  t.is((await stdoutOf(id))[0], `ppid=${remote.child.pid}`);
});
