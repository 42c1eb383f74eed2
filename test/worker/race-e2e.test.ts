import path from 'node:path';
import test from 'ava';
import { WorkerDispatcherToken } from '../../core/ports/worker.ts';
import { attemptsOf, git, logLines, syncManifest, until, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * Rival attempts end to end (docs/worker.md, "Rival attempts"): one job raced by three variants on the real harness
 * registry (the fake Claude and Codex CLIs), each on its own branch of a file:// repository with
 * its receipt and diff, the race's check command run in each workspace, the comparison, and the
 * choice that makes one attempt the job's result and deletes the other branches.
 */
const FAKE_CLAUDE = path.resolve('test/fixtures/bin/fake-claude');
const FAKE_CODEX = path.resolve('test/fixtures/bin/fake-codex');
/** Passes where the agent left CHANGES.md, except on attempt 2's branch: a check that can fail. */
const CHECK = 'test -s CHANGES.md && case "$(git symbolic-ref --short HEAD)" in *-attempt-2) echo "attempt 2 fails on purpose"; exit 3;; esac';
const VARIANTS = [
  { harness: 'harness_a', model: 'claude-opus-4-1' },
  { harness: 'harness_a', model: 'claude-sonnet-4-5', reasoning_effort: 'high' },
  { harness: 'harness_d', model: 'gpt-5-codex' },
];
let w: WorkerWorld;

test.before(async () => {
  process.env.ANTHROPIC_API_KEY = 'sk-ant-test-key';
  process.env.OPENAI_API_KEY = 'sk-openai-test-key';
  w = await workerWorld('wrace', {
    overrides: { worker: { concurrency: 3 }, harnesses: { harness_a: { command: FAKE_CLAUDE }, harness_d: { command: FAKE_CODEX } } },
  });
});
test.after.always(() => w?.stop());

const branches = () => git(w.bare, 'branch', '--format=%(refname:short)').split('\n').filter(Boolean).sort();

test.serial('three variants race one job, each on its own branch with its receipt, diff and check; choosing one makes it the result', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, { title: 'Race', description: 'Fix the bug', phase: 'backlog' });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const jobId = created.body.id;

  t.is((await w.api.post(`/jobs/${jobId}/attempts`, { variants: [VARIANTS[0]] })).statusCode, 400, 'a race needs two variants');
  t.is((await w.api.post(`/jobs/${jobId}/attempts`, { variants: VARIANTS, profile: 'x' })).statusCode, 400, 'variants or a profile, not both');
  t.is((await w.api.get(`/jobs/${jobId}/race`)).statusCode, 404, 'not raced yet');

  const started = await w.api.post(`/jobs/${jobId}/attempts`, { variants: VARIANTS, check_command: CHECK });
  t.is(started.statusCode, 201, JSON.stringify(started.body));
  t.is(started.body.job.phase, 'active');
  t.deepEqual(
    started.body.lanes.map((l: any) => [l.lane, l.variant, l.status]),
    VARIANTS.map((v, i) => [i + 1, v, 'ready']),
  );
  t.is((await w.api.post(`/jobs/${jobId}/attempts`, { variants: VARIANTS })).statusCode, 409, 'an active job is not raced again');

  const race = await until(
    async () => {
      const res = await w.api.get(`/jobs/${jobId}/race`);
      return res.body.lanes?.every((l: any) => l.status === 'ended') ? res.body : null;
    },
    'the three lanes to end',
    60_000,
  );
  t.is(race.phase, 'active', 'the job waits for a choice');
  t.is(race.check_command, CHECK);
  t.is(race.chosen, null);
  t.is(race.attempts.length, 3);
  for (const [i, a] of race.attempts.entries()) {
    t.like(a, { race_lane: i + 1, variant: VARIANTS[i], status: 'succeeded', result_status: 'success', pushed: true, chosen: false }, JSON.stringify(a));
    t.is(a.branch, `svc/${jobId}-attempt-${a.attempt_number}`);
    t.true(a.tokens.total_tokens > 0 && a.cost_usd > 0 && a.duration_ms > 0, JSON.stringify(a));
    t.like(a.diff, { files_total: 1, additions: 1, deletions: 0, files: ['CHANGES.md'] });
    t.regex(a.result_summary, /^Handled: Fix the bug/);
    t.like(a.check, { command: CHECK, passed: a.attempt_number !== 2, exit_code: a.attempt_number === 2 ? 3 : 0 });
  }
  t.regex(race.attempts.find((a: any) => a.attempt_number === 2).check.output_tail, /attempt 2 fails on purpose/);
  t.deepEqual(branches(), ['main', ...race.attempts.map((a: any) => a.branch)].sort(), 'each attempt pushed its own branch');

  // Each ran its own variant: the model is on its receipt and the CLI said which in the log.
  const attempts = await attemptsOf(w, jobId);
  for (const a of race.attempts) {
    const receipt = await w.api.get(`/jobs/${jobId}/attempts/${attempts.find((x) => x.attempt_number === a.attempt_number).id}/receipt`);
    t.true(JSON.stringify(receipt.body.llm).includes(a.variant.model), `attempt ${a.attempt_number}'s usage is under ${a.variant.model}`);
    const diff = await w.api.get(`/jobs/${jobId}/attempts/${a.attempt_number}/diff`);
    t.regex(diff.body.patch, /\+- Fix the bug/);
  }
  const log = (await logLines(w, jobId, attempts.find((x) => x.attempt_number === 1).id)).map((l) => l.line);
  t.true(log.includes('check passed (exit code 0)'), log.join('\n'));

  const failedCheck = race.attempts.find((a: any) => !a.check.passed);
  t.is((await w.api.post(`/jobs/${jobId}/attempts/9/choose`)).statusCode, 422, 'not an attempt of the race');
  const choice = await w.api.post(`/jobs/${jobId}/attempts/3/choose`);
  t.is(choice.statusCode, 200, JSON.stringify(choice.body));
  t.is(choice.body.job.phase, 'done');
  t.like(choice.body.attempt, { attempt_number: 3, chosen: true });
  t.like(choice.body.cleanup, { deleted: true, error: null });
  const chosen = race.attempts.find((a: any) => a.attempt_number === 3);
  t.deepEqual(
    choice.body.cleanup.branches,
    race.attempts
      .filter((a: any) => a !== chosen)
      .map((a: any) => a.branch)
      .sort(),
  );
  t.is(choice.body.job.resolved_git.resolved_branch, chosen.branch, "the chosen attempt's git is the job's");
  t.deepEqual(branches(), ['main', chosen.branch], "the others' branches are gone");
  t.truthy(failedCheck);

  const after = (await w.api.get(`/jobs/${jobId}/race`)).body;
  t.is(after.chosen, 3);
  t.is(after.phase, 'done');
  t.is((await w.api.post(`/jobs/${jobId}/attempts/1/choose`)).statusCode, 409, 'the choice is made once');
});

test.serial("a manifest profile's entries are the variants; cancelling the job mid-race stops every lane", async (t) => {
  await syncManifest(
    w,
    `
x-svc:
  agents:
    version: 1
    profiles:
      rivals:
        - { harness: harness_a, model: claude-opus-4-1, reasoning_effort: low }
        - { harness: harness_d, model: gpt-5-codex }
`,
  );
  // The fake CLIs hang on [[fake:hang]]: the lanes are still running when the job is cancelled.
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, { title: 'Race', description: 'Wait [[fake:hang]]', phase: 'backlog' });
  const jobId = created.body.id;
  const started = await w.api.post(`/jobs/${jobId}/attempts`, { profile: 'rivals' });
  t.is(started.statusCode, 201, JSON.stringify(started.body));
  t.deepEqual(
    started.body.lanes.map((l: any) => l.variant),
    [
      { harness: 'harness_a', model: 'claude-opus-4-1', reasoning_effort: 'low' },
      { harness: 'harness_d', model: 'gpt-5-codex' },
    ],
  );
  await until(async () => (await w.api.get(`/jobs/${jobId}/race`)).body.lanes.every((l: any) => l.status === 'running'), 'both lanes to run');
  const cancelled = await w.api.patch(`/jobs/${jobId}`, { phase: 'cancelled', close_reason: 'enough' });
  t.is(cancelled.statusCode, 200, JSON.stringify(cancelled.body));
  const race = (await w.api.get(`/jobs/${jobId}/race`)).body;
  t.deepEqual(
    race.lanes.map((l: any) => l.status),
    ['ended', 'ended'],
  );
  t.deepEqual(
    race.attempts.map((a: any) => [a.status, a.error]),
    [
      ['cancelled', 'job cancelled'],
      ['cancelled', 'job cancelled'],
    ],
  );
  await until(async () => w.srv.server.app.container.resolve(WorkerDispatcherToken).capacity() === 3, 'both runs to stop', 30_000);
});
