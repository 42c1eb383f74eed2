import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { parse, stringify } from 'yaml';
import { attemptsOf, finished, git, logLines, syncManifest, until, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * Steps that hand their work on (docs/workspaces.md), through the REST API with a real file://
 * repository, the in-process worker and the fake Codex CLI as the agent: the example manifests in
 * examples/manifests/ run as a user would run them, plus a conflict, a retry under
 * workspace.mode job and a session shared by two jobs.
 */
const FAKE_CODEX = path.resolve('test/fixtures/bin/fake-codex');
const example = (name: string) => parse(readFileSync(path.resolve('examples/manifests', name), 'utf8')) as { workflows: Record<string, unknown> };

const TEST_SH = `set -e
for d in .svc/steps/*/; do n=$(basename "$d"); echo "saw step $n: $(cat "$d/status"): $(cat "$d/summary.txt")"; done
echo "fix summary: \${SVC_STEP_FIX_SUMMARY:-none}"
cat CHANGES.md
if [ -f STYLE.md ]; then echo "style: $(cat STYLE.md)"; fi
`;
const OWN = {
  clash: {
    steps: [
      { name: 'left', run: 'echo left > same.txt; echo left > left-only.txt' },
      { name: 'right', run: 'echo right > same.txt' },
      { name: 'join', depends_on: ['left', 'right'], run: 'echo joined' },
    ],
  },
  retry: {
    hints: { max_attempts: 2 },
    workspace: { mode: 'job' },
    steps: [
      {
        name: 'flaky',
        run: 'if [ -f .cache/attempt ]; then echo "cache from attempt $(cat .cache/attempt)"; cat progress.txt; else mkdir -p .cache; echo 1 > .cache/attempt; echo "half done" > progress.txt; exit 1; fi',
      },
    ],
  },
  // No workspace mode: every attempt clones afresh, as a retry on another worker does under mode job.
  again: {
    hints: { max_attempts: 2 },
    steps: [
      {
        name: 'flaky',
        run: 'if [ -f progress.txt ]; then echo "picked up: $(cat progress.txt)"; else echo "half done" > progress.txt; exit 1; fi',
      },
    ],
  },
};

let w: WorkerWorld;
test.before(async () => {
  process.env.OPENAI_API_KEY = 'sk-openai-test-key';
  w = await workerWorld('wspaces', { overrides: { harnesses: { harness_d: { command: FAKE_CODEX } } } });
  // The project's repository: the scripts the example steps run, and an ignored cache folder.
  const seed = mkdtempSync(path.join(tmpdir(), 'svc-wspaces-seed-'));
  git(seed, 'clone', '--quiet', w.bare, '.');
  mkdirSync(path.join(seed, 'ci'));
  writeFileSync(path.join(seed, 'ci', 'test.sh'), TEST_SH);
  writeFileSync(path.join(seed, 'ci', 'format.sh'), 'echo "formatted" > STYLE.md\n');
  writeFileSync(path.join(seed, '.gitignore'), '.cache/\n');
  git(seed, 'add', '-A');
  git(seed, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--quiet', '-m', 'ci scripts');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:main');
  rmSync(seed, { recursive: true, force: true });
  const workflows = { ...example('plan-fix-test.yaml').workflows, ...example('fan-out-fan-in.yaml').workflows, ...OWN };
  await syncManifest(w, stringify({ workflows }));
});
test.after.always(() => w?.stop());

/** Invokes a workflow and waits for its root to finish; its steps' latest attempts by name. */
async function runWorkflow(name: string): Promise<{ root: any; steps: Record<string, { job: any; attempt: any }> }> {
  const invoked = await w.api.post(`/projects/${w.projectId}/workflows/${name}/invoke`, { input: { description: `Run ${name}` } });
  if (invoked.statusCode !== 201) throw new Error(JSON.stringify(invoked.body));
  const root = await finished(w, invoked.body.job_id, 90_000);
  const steps: Record<string, { job: any; attempt: any }> = {};
  for (const s of invoked.body.step_jobs ?? [{ job_id: root.id, step_name: name }]) {
    const attempts = await attemptsOf(w, s.job_id);
    steps[s.step_name] = { job: (await w.api.get(`/jobs/${s.job_id}`)).body, attempt: attempts.sort((a, b) => b.attempt_number - a.attempt_number)[0] };
  }
  return { root, steps };
}

const output = async (step: { job: any; attempt: any }) => (await logLines(w, step.job.id, step.attempt.id)).map((l) => l.line);

test.serial('plan → fix → test: the test step starts from the fix commit and reads the fix step outputs', async (t) => {
  const { root, steps } = await runWorkflow('fix-issue');
  t.is(root.phase, 'done', String(root.close_reason));
  const { plan, fix, test: check } = steps;
  const runBranch = `svc/run/${root.id}`;
  const fixReport = fix.attempt.git.workspace;
  const fixSha = fixReport.pushed_to[0].sha;
  t.deepEqual(fixReport.pushed_to, [
    { branch: `${runBranch}--fix`, sha: fixSha },
    { branch: runBranch, sha: fixSha },
  ]);
  t.deepEqual(fixReport.changed_files, ['CHANGES.md']);
  t.is(fixReport.started_from, plan.attempt.git.workspace.pushed_to[0].sha, 'the fix started from the plan');
  t.like(fixReport, { mode: 'job', reused: false, run_branch: runBranch, step_branch: `${runBranch}--fix` });

  t.like(check.attempt.git.workspace, { mode: 'run', reused: false, started_from: fixSha, merged: [], pushed_to: [], changed_files: [] });
  t.is(git(w.bare, 'rev-parse', runBranch), fixSha, 'the run branch is at the fix (the test changed nothing)');
  const lines = await output(check);
  t.true(lines.includes(`step test: started from ${fixSha} on ${runBranch}--test (run branch ${runBranch}; workspace run, fresh)`), lines.join('\n'));
  t.true(lines.includes('- Step plan of workflow fix-issue (agent planner)'), 'the plan change is there');
  t.true(lines.includes('- Step fix of workflow fix-issue (agent fixer)'), 'the fix change is there');
  t.true(lines.includes(`saw step fix: succeeded: ${fix.attempt.result_summary}`));
  t.true(lines.includes(`saw step plan: succeeded: ${plan.attempt.result_summary}`), 'outputs of steps further up too');
  t.true(lines.includes(`fix summary: ${fix.attempt.result_summary}`));
  t.true(lines.includes('nothing to push: the step changed nothing'));

  const receipt = (await w.api.get(`/jobs/${check.job.id}/attempts/${check.attempt.id}/receipt`)).body;
  t.like(receipt.workspace, { mode: 'run', reused: false, started_from: fixSha, run_branch: runBranch });
  const fixReceipt = (await w.api.get(`/jobs/${fix.job.id}/attempts/${fix.attempt.id}/receipt`)).body;
  t.deepEqual(fixReceipt.workspace.pushed_to, fixReport.pushed_to);
});

test.serial("fan-out, fan-in: both parallel fixers' changes reach the test step, merged", async (t) => {
  const { root, steps } = await runWorkflow('tidy-up');
  t.is(root.phase, 'done', String(root.close_reason));
  const runBranch = `svc/run/${root.id}`;
  const codeSha = steps.fix_code.attempt.git.workspace.pushed_to[0].sha;
  const styleSha = steps.fix_style.attempt.git.workspace.pushed_to[0].sha;
  const report = steps.test.attempt.git.workspace;
  t.is(report.merged.length, 1);
  t.deepEqual(report.merged[0], { step: 'fix_style', branch: `${runBranch}--fix_style`, sha: styleSha });
  const lines = await output(steps.test);
  t.true(lines.includes('style: formatted'), lines.join('\n'));
  t.true(lines.includes('- Step fix_code of workflow tidy-up (agent fixer)'));
  // The merge is the test step's contribution: it moves the run branch to a commit holding both.
  const head = git(w.bare, 'rev-parse', runBranch);
  t.is(git(w.bare, 'merge-base', '--is-ancestor', codeSha, head), '');
  t.is(git(w.bare, 'merge-base', '--is-ancestor', styleSha, head), '');
  t.is(git(w.bare, 'show', `${head}:STYLE.md`), 'formatted');
});

test.serial('a conflict between parallel steps fails the step after them, naming the paths', async (t) => {
  const { root, steps } = await runWorkflow('clash');
  t.is(root.phase, 'cancelled');
  const { join } = steps;
  t.is(join.attempt.status, 'failed');
  t.regex(join.attempt.error, /^merging step '(left|right)' \(svc\/run\/[^)]+--(left|right)\) into step 'join' conflicts in same\.txt: /);
  t.false(join.attempt.error.includes('left-only.txt'));
  t.true((await output(join)).some((l) => l.startsWith('failed: merging step')));
});

test.serial("a retry under workspace.mode job continues in the previous attempt's workspace", async (t) => {
  const { root } = await runWorkflow('retry');
  t.is(root.phase, 'done', String(root.close_reason));
  const [first, second] = (await attemptsOf(w, root.id)).sort((a, b) => a.attempt_number - b.attempt_number);
  t.like(first, { status: 'failed', error: 'exited with code 1' });
  const firstSha = first.git.workspace.pushed_to[0].sha;
  t.deepEqual(first.git.workspace.changed_files, ['progress.txt'], 'the failed attempt committed and pushed its work');
  t.like(second.git.workspace, { mode: 'job', reused: true, started_from: firstSha });
  const lines = (await logLines(w, root.id, second.id)).map((l) => l.line);
  t.true(
    lines.some((l) => l.endsWith("(workspace job, reused: this job's earlier attempt left it)")),
    lines.join('\n'),
  );
  t.true(lines.includes('cache from attempt 1'), 'the ignored cache of attempt 1 is still there: the same workspace');
  t.true(lines.includes('half done'));
});

test.serial('a session workspace is used by one job at a time; the other waits, and says so', async (t) => {
  const create = () =>
    w.api.post(`/projects/${w.projectId}/jobs`, {
      description: 'session user',
      workspace: { mode: 'session', key: 'shared-cache' },
      hints: {
        step: { kind: 'script', script: { run: 'echo "start $SVC_JOB_ID" >> session.log; sleep 2; echo "end $SVC_JOB_ID" >> session.log; cat session.log' } },
      },
    });
  const ids = [(await create()).body.id, (await create()).body.id];
  const jobs = await Promise.all(ids.map((id) => finished(w, id)));
  t.deepEqual(
    jobs.map((j) => j.phase),
    ['done', 'done'],
    JSON.stringify(jobs.map((j) => j.close_reason)),
  );
  const [a, b] = await Promise.all(ids.map(async (id) => (await attemptsOf(w, id))[0]));
  const [firstId, secondId] = new Date(a.ended_at) < new Date(b.ended_at) ? ids : [...ids].reverse();
  const [first, second] = firstId === ids[0] ? [a, b] : [b, a];
  t.true(new Date(second.started_at) < new Date(first.ended_at), 'both were claimed while the first ran');
  const secondLines = (await logLines(w, secondId, second.id)).map((l) => l.line);
  t.true(secondLines.includes(`waiting for the session workspace 'shared-cache': job ${firstId} is using it`), secondLines.join('\n'));
  const log = secondLines.filter((l) => /^(start|end) /.test(l));
  t.deepEqual(log, [`start ${firstId}`, `end ${firstId}`, `start ${secondId}`, `end ${secondId}`], 'never interleaved');
  t.true(secondLines.some((l) => l.endsWith("(workspace session 'shared-cache', reused: an earlier job of the session left it)")));
  const progress: { payload_json: { message: string } } = await until(
    () => w.srv.kernel.db('events').where({ type: 'runner.progress' }).whereRaw("payload_json->>'job_id' = ?", [secondId]).first('payload_json'),
    'the waiting progress event',
  );
  t.regex(progress.payload_json.message, /^waiting for the session workspace 'shared-cache'/);
});

test.serial('a retry in a fresh clone (another worker, or no workspace mode) starts from what the failed attempt pushed', async (t) => {
  const { root } = await runWorkflow('again');
  t.is(root.phase, 'done', String(root.close_reason));
  const [first, second] = (await attemptsOf(w, root.id)).sort((a, b) => a.attempt_number - b.attempt_number);
  const pushed = first.git.workspace.pushed_to;
  t.deepEqual(
    pushed.map((p: any) => p.branch),
    [`svc/run/${root.id}--flaky`, `svc/run/${root.id}`],
    'the failed attempt pushed its work',
  );
  t.like(second.git.workspace, { mode: 'run', reused: false, started_from: pushed[0].sha });
  t.true((await logLines(w, root.id, second.id)).some((l) => l.line === 'picked up: half done'));
});
