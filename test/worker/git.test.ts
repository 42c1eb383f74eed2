import test from 'ava';
import { attemptsOf, finished, git, logLines, workerWorld, type WorkerWorld } from './helpers.ts';

/** The git controls table: refs, branches, commit and push policies, against a file:// bare repository. */
let w: WorkerWorld;
test.before(async () => {
  w = await workerWorld('wgit');
});
test.after.always(() => w?.stop());

async function gitJob(gitControls: Record<string, unknown>, run = 'echo change > f.txt'): Promise<{ job: any; attempt: any }> {
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'git', git: gitControls, hints: { step: { kind: 'script', script: { run } } } });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  const job = await finished(w, res.body.id);
  return { job, attempt: (await attemptsOf(w, job.id))[0] };
}

test.serial('an explicit tag is checked out detached; pushing from it needs git.branch', async (t) => {
  const main = git(w.bare, 'rev-parse', 'main');
  git(w.bare, 'tag', 'v1', main);
  const detached = await gitJob({ ref: 'v1' }, 'git rev-parse HEAD; git symbolic-ref -q HEAD || echo detached');
  t.like(detached.attempt.git, { resolved_ref: 'v1', resolved_sha: main, resolved_branch: null, ref_source: 'explicit', pushed: false, commits: [] });
  const pushing = await gitJob({ ref: 'v1', push: 'on_success', commit: 'auto' });
  t.is(pushing.attempt.error, "git.push is on_success but there is no branch to push: 'v1' is not a branch, so set git.branch");
});

test.serial('an unknown ref, and a missing branch under create_branch never, fail before running', async (t) => {
  const unknown = await gitJob({ ref: 'nope' });
  t.is(unknown.attempt.error, `git ref 'nope' (explicit) is not a branch, tag or commit of file://${w.bare}`);
  const never = await gitJob({ branch: 'feature/${job_id}', create_branch: 'never' });
  t.is(never.attempt.error, `git.branch 'feature/${never.job.id}' does not exist on the remote and git.create_branch is never`);
});

test.serial('commit required fails a successful attempt that changed nothing; manual commits are not pushed', async (t) => {
  const required = await gitJob({ branch: 'req/${job_id}', commit: 'required', push: 'on_success' }, 'echo nothing to do');
  t.is(required.attempt.error, 'git.commit is required but the attempt left no changes to commit');
  const manual = await gitJob({ branch: 'man/${job_id}', push: 'on_success' }, 'echo x > m.txt && git add m.txt && git commit -qm mine');
  t.is(manual.job.phase, 'done');
  t.like(manual.attempt.git, { pushed: false, commits: [] });
  t.throws(() => git(w.bare, 'rev-parse', '--verify', '--quiet', `man/${manual.job.id}`));
});

test.serial('push required fails the attempt when the push fails; create_branch always resets an existing branch', async (t) => {
  // The remote cannot take the branch: a branch `pr` there leaves no room for `pr/<id>` (git.remote may name no
  // path or file:// to push elsewhere: test/security/push-remotes.test.ts).
  git(w.bare, 'branch', 'pr', 'main');
  const failing = await gitJob({ branch: 'pr/${job_id}', commit: 'auto', push: 'required' }).finally(() => git(w.bare, 'branch', '-D', 'pr'));
  t.regex(failing.attempt.error, /^git push failed: /);
  t.is(failing.attempt.git.pushed, false);

  const first = await gitJob({ branch: 'shared', commit: 'auto', push: 'on_success' }, 'echo one > one.txt');
  t.true(first.attempt.git.pushed);
  t.is(
    git(w.bare, 'log', '-1', '--format=%an <%ae> / %cn <%ce>', 'shared'),
    'svc <svc@localhost> / svc <svc@localhost>',
    'the worker commits as worker.git.author_*',
  );
  const reset = await gitJob({ branch: 'shared', create_branch: 'always', commit: 'auto', push: 'required' }, 'test ! -e one.txt && echo two > two.txt');
  t.is(reset.job.phase, 'done', String(reset.attempt.error));
  t.is(git(w.bare, 'rev-parse', 'shared^'), git(w.bare, 'rev-parse', 'main'), 'the branch was reset to the ref, not built on its old tip');
  const continued = await gitJob({ branch: 'shared', commit: 'auto', push: 'on_success' }, 'test -e two.txt && echo three > three.txt');
  t.is(continued.job.phase, 'done', String(continued.attempt.error));
  t.is(git(w.bare, 'rev-parse', 'shared^'), reset.attempt.git.commits[0], 'if_missing checks out the existing branch tip');
});

test.serial("changes left uncommitted are named at the end of the log and in the attempt's git, with why and how to keep them", async (t) => {
  const manual = await gitJob({}, 'echo a > a.txt && echo b > b.txt && rm README.md 2>/dev/null; true');
  t.is(manual.job.phase, 'done');
  const lines = (await logLines(w, manual.job.id, manual.attempt.id)).map((l) => l.line);
  t.regex(
    lines.join('\n'),
    /\n\d+ files changed, not committed: git.commit is manual \(git.commit auto commits the work; git.push on_success with git.branch pushes it\)/,
  );
  t.like(manual.attempt.git.uncommitted, { reason: 'git.commit is manual' });
  t.true(manual.attempt.git.uncommitted.files >= 2);
  const never = await gitJob({ commit: 'never' }, 'echo c > c.txt');
  t.true((await logLines(w, never.job.id, never.attempt.id)).some((l) => l.line === '1 file changed, not committed: git.commit is never'));
  t.deepEqual(never.attempt.git.uncommitted, { files: 1, reason: 'git.commit is never' });
  const clean = await gitJob({}, 'echo nothing');
  t.is(clean.attempt.git.uncommitted, undefined);
  t.false(
    (await logLines(w, clean.job.id, clean.attempt.id)).some((l) => l.line.includes('not committed')),
    'nothing changed: nothing said',
  );
});
