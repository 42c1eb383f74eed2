import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { attemptsOf, finished, git, logLines, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * A root server runs attempts as worker.run_as_uid (1000 here, the spec's): the worker hands the
 * checkout to that user, the process runs as it with a home of its own, and the worker (root) still
 * commits and pushes what it wrote. A workspace root that user cannot reach fails the attempt saying
 * what to change. (The rest of the suite runs attempts as the test runner's user: config/test.yaml.)
 */
const asRoot = process.getuid?.() === 0;
const open = mkdtempSync(path.join(tmpdir(), 'svc-run-as-'));
chmodSync(open, 0o755);
let w: WorkerWorld;

test.before(async () => {
  if (!asRoot) return;
  w = await workerWorld('wrunas', { overrides: { worker: { run_as_uid: 1000, workspace_root: path.join(open, 'workspaces') } } });
});
test.after.always(async () => {
  await w?.stop();
  rmSync(open, { recursive: true, force: true });
});

const script = (w: WorkerWorld, run: string, extra: Record<string, unknown> = {}) =>
  w.api.post(`/projects/${w.projectId}/jobs`, { description: 'run as', hints: { step: { kind: 'script', script: { run } } }, ...extra });

test.serial('the process runs as uid 1000 in a workspace handed to it; the worker commits and pushes its change', async (t) => {
  if (!asRoot) return t.pass('the server is not root: processes run as its own user');
  const run =
    'id -u; id -g; echo "home=$HOME"; echo made > made.txt; touch "$HOME/cache"; printf \'%s\\n\' \'```json-result\' \'{"svc":{"status":"success","summary":"wrote made.txt"}}\' \'```\'';
  const created = await script(w, run, { git: { branch: 'svc/${job_id}', commit: 'auto', push: 'on_success' } });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const job = await finished(w, created.body.id);
  const [attempt] = await attemptsOf(w, job.id);
  const out = (await logLines(w, job.id, attempt.id)).filter((l) => l.stream === 'stdout').map((l) => l.line);
  t.is(job.phase, 'done', out.join('\n'));
  t.deepEqual(out.slice(0, 2), ['1000', '1000']);
  t.regex(out[2], /^home=.*\/\.svc\/home$/);
  t.true(attempt.git.pushed);
  t.is(git(w.bare, 'show', `svc/${job.id}:made.txt`), 'made');
  t.deepEqual(
    git(w.bare, 'ls-tree', '-r', '--name-only', `svc/${job.id}`)
      .split('\n')
      .filter((f) => f.startsWith('.svc')),
    [],
    'the home is not committed',
  );
});

test.serial('unsandboxed, a workspace root that uid 1000 cannot reach fails the attempt naming the directory and the settings', async (t) => {
  if (!asRoot) return t.pass('the server is not root');
  const closed = path.join(open, 'closed');
  mkdirSync(closed, { mode: 0o700 });
  // The sandbox binds the workspace where it is, so the folders above it need not let the user through: only unsandboxed do they.
  const other = await workerWorld('wrunas2', {
    overrides: { worker: { run_as_uid: 1000, workspace_root: path.join(closed, 'workspaces'), sandbox: { mode: 'off' } } },
  });
  try {
    const job = await finished(other, (await script(other, 'echo never')).body.id);
    const [attempt] = await attemptsOf(other, job.id);
    t.is(attempt.status, 'failed');
    t.is(
      attempt.error,
      `processes run as uid 1000, which cannot reach the workspace: ${closed} is mode 0700 owned by uid 0. Set worker.workspace_root (SVC_WORKSPACE_ROOT) to a directory that user can reach, or worker.run_as_uid (SVC_RUN_AS_UID) to null to run as the server's own user`,
    );
  } finally {
    await other.stop();
  }
});

test.serial('unsandboxed, with no workspace_root, a data directory uid 1000 cannot reach moves the workspaces to /var/lib/svc, and jobs run', async (t) => {
  if (!asRoot) return t.pass('the server is not root');
  // A checkout in /root: the data directory is inside a private folder.
  const closed = path.join(open, 'private-home');
  mkdirSync(closed, { mode: 0o700 });
  const dataDir = path.join(closed, 'data');
  const other = await workerWorld('wrunas3', {
    overrides: { data_dir: dataDir, worker: { run_as_uid: 1000, workspace_root: null, sandbox: { mode: 'off' } } },
  });
  const moved = path.join('/var/lib/svc/workspaces', createHash('sha256').update(dataDir).digest('hex').slice(0, 16));
  try {
    const run = `id -u; pwd; printf '%s\\n' '\`\`\`json-result' '{"svc":{"status":"success","summary":"ran"}}' '\`\`\`'`;
    const job = await finished(other, (await script(other, run)).body.id);
    const [attempt] = await attemptsOf(other, job.id);
    const out = (await logLines(other, job.id, attempt.id)).filter((l) => l.stream === 'stdout').map((l) => l.line);
    t.is(job.phase, 'done', JSON.stringify(attempt));
    t.is(out[0], '1000');
    t.true(out[1].startsWith(`${moved}/`), out[1]);
  } finally {
    await other.stop();
    rmSync(moved, { recursive: true, force: true });
  }
});
