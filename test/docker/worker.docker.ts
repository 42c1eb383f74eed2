/**
 * End to end through the REST API with `adapters.runtime: {use: docker}` on a real Docker engine
 * (npm run test:docker): the worker checks out and pushes on the host, the attempt's process runs in
 * a container of the locally built image with the workspace mounted at its own path, as
 * worker.run_as_uid 1000 (the worker hands the workspace over; config/test.yaml's null is overridden).
 */
import test from 'ava';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { attemptsOf, finished, git, logLines, until, workerWorld, type WorkerWorld } from '../worker/helpers.ts';
import { BIN, containerActions, containersLabelled, IMAGE } from './helpers.ts';

// harness_b's credentials come from this process's environment: make them known.
for (const name of Object.keys(process.env)) if (/_API_KEY$|^CLAUDE_CODE_|^ANTHROPIC_/.test(name)) delete process.env[name];
process.env.CLAUDE_CODE_OAUTH_TOKEN = 'sk-ant-oat-docker-test-not-shown';

// Every folder above a workspace must let uid 1000 through (the worker checks before handing it over).
const open = mkdtempSync(path.join(tmpdir(), 'svc-docker-worker-'));
chmodSync(open, 0o755);
let w: WorkerWorld;
test.before(async () => {
  w = await workerWorld('wdocker', {
    overrides: {
      worker: { run_as_uid: 1000, workspace_root: path.join(open, 'workspaces') },
      adapters: { runtime: { use: 'docker', options: { image: IMAGE, network: 'none', kill_grace_ms: 1000, extra_binds: [`${BIN}:${BIN}:ro`] } } },
      harnesses: { harness_b: { command: path.join(BIN, 'fake-claude') } },
    },
  });
});
test.after.always(async () => {
  await w?.stop();
  rmSync(open, { recursive: true, force: true });
});

/** The job's phases as polled until it finishes, each once, in order. */
async function phasesUntilFinished(jobId: string): Promise<string[]> {
  const seen: string[] = [];
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
    const { phase } = (await w.api.get(`/jobs/${jobId}`)).body;
    if (seen.at(-1) !== phase) seen.push(phase);
    if (phase === 'done' || phase === 'cancelled') return seen;
  }
  throw new Error(`job ${jobId} did not finish: ${seen.join(' → ')}`);
}

test.serial('a harness_b job with the fake CLI runs in a container: ready → active → done, pushed, with a receipt and logs', async (t) => {
  // Over 100 KB, the prompt goes to .svc/prompt.md through spec.files: the CLI in the container reads
  // it from the mounted workspace and edits CHANGES.md there; the worker commits that on the host
  // (git.commit required), never its own prompt file.
  const since = new Date(Date.now() - 1000);
  const description = `Fix the flaky test.\n${'Some context the agent needs.\n'.repeat(4000)}`;
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description,
    harness: 'harness_b',
    git: { branch: 'agent/${job_id}', commit: 'required', push: 'on_success' },
  });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  t.is(created.body.phase, 'ready');
  const phases = await phasesUntilFinished(created.body.id);
  t.deepEqual(
    phases.filter((p) => p !== 'ready'),
    ['active', 'done'],
  );

  const job = (await w.api.get(`/jobs/${created.body.id}`)).body;
  const [attempt] = await attemptsOf(w, job.id);
  t.like(attempt, { status: 'succeeded', result_summary: `Handled: ${description.slice(0, 60).replace(/\s+/g, ' ')}` });
  t.like(attempt.git, { resolved_branch: `agent/${job.id}`, pushed: true });
  t.is(attempt.git.commits.length, 1);
  t.is(git(w.bare, 'rev-parse', `agent/${job.id}`), attempt.git.commits[0]);
  t.is(git(w.bare, 'show', `agent/${job.id}:CHANGES.md`), '- Fix the flaky test.');
  t.deepEqual(
    git(w.bare, 'ls-tree', '-r', '--name-only', `agent/${job.id}`)
      .split('\n')
      .filter((f) => f.startsWith('.svc/')),
    [],
  );

  const lines = await logLines(w, job.id, attempt.id);
  const stdout = lines.filter((l) => l.stream === 'stdout').map((l) => l.line);
  t.true(stdout.includes('Let me look at the repository.'));
  t.true(stdout.includes('[tool] Bash'));
  t.true(stdout.includes('```json-result'));
  t.true(lines.some((l) => l.stream === 'system' && l.line === `started harness_b (${path.join(BIN, 'fake-claude')})`));
  t.true(lines.some((l) => l.stream === 'system' && l.line.startsWith('process ended (exit code 0): success')));

  const receipt = await w.api.get(`/jobs/${job.id}/receipt`);
  t.is(receipt.statusCode, 200);
  t.like(receipt.body.llm, { input_tokens: 1200, output_tokens: 340 });
  t.deepEqual(await containersLabelled(`svc.job_id=${job.id}`), [], 'the container is gone');
  const actions = await containerActions(`svc.job_id=${job.id}`, since);
  t.deepEqual(
    actions.filter((a) => ['create', 'start', 'die', 'destroy'].includes(a)),
    ['create', 'start', 'die', 'destroy'],
    'one container, run and removed',
  );
});

test.serial('a script job writes into the mounted workspace as uid 1000; the host commits and pushes it', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'script in docker',
    git: { branch: 'script/${job_id}', commit: 'auto', push: 'on_success' },
    hints: {
      step: { kind: 'script', script: { run: 'id -u > uid.txt && echo "$SVC_JOB_ID" > job.txt && test -f "$SVC_RESOURCE_INDEX" && echo resources-visible' } },
      resource_class: 'job.c2',
    },
  });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const job = await finished(w, created.body.id, 60_000);
  t.is(job.phase, 'done');
  const [attempt] = await attemptsOf(w, job.id);
  t.like(attempt, { status: 'succeeded' });
  t.true(attempt.git.pushed);
  t.is(git(w.bare, 'show', `script/${job.id}:uid.txt`), '1000');
  t.is(git(w.bare, 'show', `script/${job.id}:job.txt`), job.id);
  const lines = await logLines(w, job.id, attempt.id);
  t.true(
    lines.some((l) => l.stream === 'stdout' && l.line === 'resources-visible'),
    'SVC_RESOURCE_INDEX is valid inside the container',
  );
  t.deepEqual(await containersLabelled(`svc.job_id=${job.id}`), []);
});

test.serial('a job timing out in its container is killed and fails saying so', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'hang',
    hints: { timeout_seconds: 2, step: { kind: 'script', script: { run: 'echo begun; sleep 60' } } },
  });
  const started = Date.now();
  const job = await finished(w, created.body.id, 60_000);
  t.true(Date.now() - started < 30_000);
  const [attempt] = await attemptsOf(w, job.id);
  t.like(attempt, { status: 'failed', error: 'timed out after 2 s (hints.timeout_seconds); the process tree was killed' });
  t.deepEqual(await containersLabelled(`svc.job_id=${job.id}`), []);
});

test.serial('cancelling a job running in a container stops and removes the container', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'long',
    hints: { step: { kind: 'script', script: { run: 'echo begun; sleep 60' } } },
  });
  const jobId = created.body.id;
  await until(async () => (await containersLabelled(`svc.job_id=${jobId}`)).some((c) => c.State === 'running'), 'the container to run', 30_000);
  const cancelled = await w.api.patch(`/jobs/${jobId}`, { phase: 'cancelled', close_reason: 'not needed' });
  t.is(cancelled.statusCode, 200, JSON.stringify(cancelled.body));
  const [attempt] = await attemptsOf(w, jobId);
  t.like(attempt, { status: 'cancelled' });
  await until(async () => (await containersLabelled(`svc.job_id=${jobId}`)).length === 0, 'the container to be removed', 20_000);
  const lines = await until(
    async () => {
      const all = await logLines(w, jobId, attempt.id);
      return all.some((l) => l.line === 'stopped: job cancelled: not needed') ? all : null;
    },
    'the stopped line',
    20_000,
  );
  t.true(lines.some((l) => l.stream === 'stdout' && l.line === 'begun'));
});
