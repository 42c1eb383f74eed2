/**
 * `svc job race`, `svc job compare` and `svc job choose` against a real server whose worker runs
 * the fake Claude and Codex CLIs on a file:// repository (docs/worker.md, "Rival attempts"), and
 * the CLI's own refusals before any request.
 */
import path from 'node:path';
import { rm } from 'node:fs/promises';
import test from 'ava';
import { workerWorld, type WorkerWorld } from '../worker/helpers.ts';
import { runCli, showRun, tempHome } from './helpers.ts';

const FAKE_CLAUDE = path.resolve('test/fixtures/bin/fake-claude');
const FAKE_CODEX = path.resolve('test/fixtures/bin/fake-codex');
let w: WorkerWorld;
let home = '';

test.before(async () => {
  process.env.ANTHROPIC_API_KEY = 'sk-ant-test-key';
  process.env.OPENAI_API_KEY = 'sk-openai-test-key';
  home = await tempHome();
  w = await workerWorld('clirace', {
    overrides: { worker: { concurrency: 3 }, harnesses: { harness_a: { command: FAKE_CLAUDE }, harness_d: { command: FAKE_CODEX } } },
  });
});
test.after.always(async () => {
  await w?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

const svc = (args: string[]) => runCli(home, args, { SVC_API_URL: w.srv.url, SVC_TOKEN: w.token });

test.serial('race three variants with a check and wait, compare them, choose one', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, { title: 'Race', description: 'Fix the bug', phase: 'backlog' });
  const jobId = created.body.id;
  const args = [
    'job',
    'race',
    jobId,
    '--variant',
    'harness_a,model=claude-opus-4-1',
    '--variant',
    'harness=harness_a,model=claude-sonnet-4-5,reasoning_effort=high',
    '--variant',
    'harness_d',
    '--check',
    'grep -q "Fix the bug" CHANGES.md',
    '--wait',
  ];
  const raced = await svc(args);
  t.is(raced.code, 0, showRun(args, raced));
  t.regex(raced.stderr, new RegExp(`svc: job ${jobId} is racing 3 variants; waiting for every lane to end`));
  const lines = raced.stdout.split('\n');
  t.is(lines[0], `race of job ${jobId} (active), check: grep -q "Fix the bug" CHANGES.md`);
  t.regex(lines[1], /^#\s+LANE\s+VARIANT\s+STATUS\s+CHECK\s+DIFF\s+COST\s+TIME\s+TOKENS\s+SUMMARY$/);
  t.regex(lines[2], /^1\s+1\s+harness_a claude-opus-4-1\s+succeeded\s+passed\s+1 files \+1 -0\s+\$\d+\.\d{4}\s+[\d.]+m?s\s+\d+\s+Handled: Fix the bug/);
  t.regex(lines[3], /^2\s+2\s+harness_a claude-sonnet-4-5 effort high\s+succeeded\s+passed/);
  t.regex(lines[4], /^3\s+3\s+harness_d\s+succeeded\s+passed/);
  t.true(raced.stdout.includes(`attempt 1: svc/${jobId}-attempt-1 (pushed)\n  CHANGES.md`), raced.stdout);
  t.true(raced.stdout.trimEnd().endsWith('every lane ended: choose one with `svc job choose JOB N`'));

  const compared = await svc(['job', 'compare', jobId, '--json']);
  t.is(compared.code, 0, compared.stderr);
  const race = JSON.parse(compared.stdout);
  t.deepEqual(
    race.attempts.map((a: any) => [a.attempt_number, a.variant, a.check.passed]),
    [
      [1, { harness: 'harness_a', model: 'claude-opus-4-1' }, true],
      [2, { harness: 'harness_a', model: 'claude-sonnet-4-5', reasoning_effort: 'high' }, true],
      [3, { harness: 'harness_d' }, true],
    ],
  );

  const chose = await svc(['job', 'choose', jobId, '2']);
  t.is(chose.code, 0, showRun(['job', 'choose', jobId, '2'], chose));
  t.is(chose.stdout, `Attempt 2 is the result of job ${jobId}, which is done.\n`);
  t.is(chose.stderr, `svc: deleted the other attempts' branches: svc/${jobId}-attempt-1, svc/${jobId}-attempt-3\n`);
  const after = await svc(['job', 'compare', jobId]);
  t.true(after.stdout.includes('succeeded (chosen)'), after.stdout);
  t.true(after.stdout.trimEnd().endsWith('attempt 2 was chosen'));

  const pairwise = await svc(['job', 'compare', jobId, '--a', '1', '--b', '2', '--json']);
  t.is(pairwise.code, 0, pairwise.stderr);
  t.is(JSON.parse(pairwise.stdout).b.attempt_number, 2, '--a and --b still compare two attempts');
});

test.serial('refused before any request: one variant, both --variant and --from-profile, an unknown key', async (t) => {
  for (const [args, message] of [
    [['job', 'race', 'web-1', '--variant', 'harness_a'], /a race needs two --variant flags or more, or --from-profile NAME/],
    [['job', 'race', 'web-1', '--variant', 'harness_a', '--variant', 'harness_d', '--from-profile', 'p'], /--variant or --from-profile, not both/],
    [['job', 'race', 'web-1', '--variant', 'harness_a', '--variant', 'colour=red'], /--variant: unknown key "colour"/],
  ] as const) {
    const r = await svc([...args]);
    t.is(r.code, 2, showRun([...args], r));
    t.regex(r.stderr, message);
  }
});
