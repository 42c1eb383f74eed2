import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { attemptsOf, finished, logLines, syncManifest, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * A harness profile's fallbacks on retry, with the real harness registry: harness_b's binary is a
 * script that always fails, harness_d's is the fake Codex CLI. Attempt 1 runs the profile's first
 * entry and fails; attempt 2 runs the second entry with its own model and succeeds.
 */
const FAKE_CODEX = path.resolve('test/fixtures/bin/fake-codex');
const bin = mkdtempSync(path.join(tmpdir(), 'svc-fallback-bin-'));
const BROKEN = path.join(bin, 'broken-claude');
let w: WorkerWorld;

test.before(async () => {
  writeFileSync(BROKEN, '#!/bin/sh\necho "claude: error: API Error: 529 overloaded" >&2\nexit 1\n');
  chmodSync(BROKEN, 0o755);
  process.env.ANTHROPIC_API_KEY = 'sk-ant-test-key';
  process.env.OPENAI_API_KEY = 'sk-openai-test-key';
  w = await workerWorld('wfallbk', { overrides: { harnesses: { harness_b: { command: BROKEN }, harness_d: { command: FAKE_CODEX } } } });
  await syncManifest(
    w,
    `
x-svc:
  agents:
    version: 1
    profiles:
      careful:
        - { harness: harness_b, model: claude-opus-4-1 }
        - { harness: harness_d, model: gpt-5-codex }
`,
  );
});
test.after.always(async () => {
  await w?.stop();
  rmSync(bin, { recursive: true, force: true });
});

test('a retry after a failed attempt runs the next profile entry; the log says which and why', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'Fix the bug', harness_profile: 'careful', hints: { max_attempts: 2 } });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const job = await finished(w, created.body.id);
  t.is(job.phase, 'done');
  const [first, second] = (await attemptsOf(w, job.id)).sort((a, b) => a.attempt_number - b.attempt_number);
  t.like(first, { attempt_number: 1, status: 'failed' });
  t.like(second, { attempt_number: 2, status: 'succeeded', result_summary: 'Handled: Fix the bug' });

  const firstLog = (await logLines(w, job.id, first.id)).map((l) => l.line);
  t.true(firstLog.includes(`started harness_b (${BROKEN})`), firstLog.join('\n'));
  const secondLog = (await logLines(w, job.id, second.id)).map((l) => l.line);
  t.true(secondLog.includes("fallback after 1 failed attempt: entry 2 of 2 in profile 'careful' (harness_d, gpt-5-codex)"), secondLog.join('\n'));
  t.true(secondLog.includes(`started harness_d (${FAKE_CODEX})`));
  const receipt = await w.api.get(`/jobs/${job.id}/attempts/${second.id}/receipt`);
  t.true(JSON.stringify(receipt.body.llm).includes('gpt-5-codex'), "usage is recorded under the fallback's model");
});
