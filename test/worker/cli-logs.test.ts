import { rm } from 'node:fs/promises';
import test from 'ava';
import { runCli, tempHome } from '../cli/helpers.ts';
import { finished, workerWorld, type WorkerWorld } from './helpers.ts';

/** `svc job logs` against a server whose worker runs the job: follow live, then read back, and the errors. */
let w: WorkerWorld;
let home = '';
test.before(async () => {
  w = await workerWorld('wcli');
  home = await tempHome();
});
test.after.always(async () => {
  await w?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

const svc = (...args: string[]) => runCli(home, args, { SVC_API_URL: w.srv.url, SVC_TOKEN: w.token });

async function scriptJob(run: string): Promise<string> {
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'cli', hints: { step: { kind: 'script', script: { run } } } });
  return res.body.id;
}

test.serial('svc job logs -f follows the latest attempt live to its end; without -f it prints what is stored', async (t) => {
  const jobId = await scriptJob('echo one; sleep 0.5; echo two >&2; echo three');
  const followed = await svc('job', 'logs', jobId, '-f');
  t.is(followed.code, 0, followed.stderr);
  const out = followed.stdout.trimEnd().split('\n');
  t.deepEqual(
    out.filter((l) => !l.startsWith('svc: ')),
    ['one', 'two', 'three'],
  );
  t.true(out.includes('svc: process ended (exit code 0): success'));
  t.regex(followed.stderr, /svc: attempt 1 succeeded/);

  await finished(w, jobId);
  const stored = await svc('job', 'logs', jobId, '--attempt', '1');
  t.is(stored.code, 0, stored.stderr);
  t.is(stored.stdout, followed.stdout);
  const json = await svc('job', 'logs', jobId, '--json');
  const lines = json.stdout
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.deepEqual(
    lines.map((l) => l.seq),
    lines.map((_, i) => i + 1),
  );
  t.true(lines.some((l) => l.stream === 'stderr' && l.line === 'two'));
});

test.serial('svc job logs -f exits 1 when the attempt fails; unknown attempts and jobs are errors', async (t) => {
  const jobId = await scriptJob('echo bad; exit 4');
  const followed = await svc('job', 'logs', jobId, '-f');
  t.is(followed.code, 1);
  t.true(followed.stdout.includes('bad'));
  t.regex(followed.stderr, /svc: attempt 1 failed/);
  const missing = await svc('job', 'logs', jobId, '--attempt', '9');
  t.not(missing.code, 0);
  t.regex(missing.stderr, /attempt 9 of job .* not found/);
  const noJob = await svc('job', 'logs', 'wcli-00000000');
  t.regex(noJob.stderr, /job wcli-00000000 not found/);
});
