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

test.serial('a workspace root that uid 1000 cannot reach fails the attempt naming the directory and the settings', async (t) => {
  if (!asRoot) return t.pass('the server is not root');
  const closed = path.join(open, 'closed');
  mkdirSync(closed, { mode: 0o700 });
  const other = await workerWorld('wrunas2', { overrides: { worker: { run_as_uid: 1000, workspace_root: path.join(closed, 'workspaces') } } });
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
