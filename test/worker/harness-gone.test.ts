import { chmodSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { attemptsOf, finished, logLines, until, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * The CLI of a job's harness vanishes between create (when the worker still reported it) and the
 * run: the attempt ends failed, not cancelled, naming the harness and what is missing, and the
 * worker reports at once, so the next create is refused without waiting for its next report.
 */
const FAKE_CLAUDE = path.resolve('test/fixtures/bin/fake-claude');
// Readable by the user attempts run as (mkdtemp makes it private to the test's own).
const binDir = mkdtempSync(path.join(tmpdir(), 'svc-gone-'));
chmodSync(binDir, 0o755);
const cli = path.join(binDir, 'claude');
let w: WorkerWorld;

test.before(async () => {
  process.env.ANTHROPIC_API_KEY = 'sk-ant-test-key';
  symlinkSync(FAKE_CLAUDE, cli);
  // The default report interval (30 s): only the report an attempt triggers can refuse the second create in time.
  w = await workerWorld('wgone', { overrides: { harnesses: { harness_b: { command: cli } } } });
});
test.after.always(async () => {
  await w?.stop();
  rmSync(binDir, { recursive: true, force: true });
});

test('an attempt whose CLI vanished after create fails naming the harness and the binary, and the next create is refused', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'Note the change',
    harness: 'harness_b',
    defer_until: new Date(Date.now() + 1500).toISOString(),
  });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  rmSync(cli);

  const job = await finished(w, created.body.id);
  const attempts = await attemptsOf(w, job.id);
  t.is(attempts.length, 1);
  const [attempt] = attempts;
  t.is(attempt.status, 'failed', JSON.stringify(attempt));
  t.regex(attempt.error, new RegExp(`^harness harness_b cannot run on this worker: binary '${cli}' not found`));
  t.regex(job.close_reason, /^attempt 1 failed \(1 of 1 allowed attempts failed\): harness harness_b cannot run on this worker: binary '.*' not found/);
  const lines = (await logLines(w, job.id, attempt.id)).map((l) => l.line);
  t.true(
    lines.some((l) => l.startsWith('failed: harness harness_b cannot run on this worker')),
    lines.join('\n'),
  );

  const refused = await until(
    async () => {
      const res = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'Again', harness: 'harness_b' });
      return res.statusCode === 422 ? res : null;
    },
    'the worker to report its harness gone',
    5000,
  );
  t.is(refused.body.message, `harness_b cannot run on any worker: the ${cli} binary was not found (1 worker reported; docs/harnesses.md, "Refused at create")`);
});
