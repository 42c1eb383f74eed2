import test from 'ava';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { attemptsOf, finished, git, logLines, workerWorld, type WorkerWorld } from './helpers.ts';

/** workspace.sparse and git.depth (issue 35): validated at creation, applied at checkout, and said in the attempt's workspace report. */
let w: WorkerWorld;
test.before(async () => {
  w = await workerWorld('wcheck');
  // A monorepo of two folders and three commits.
  const work = mkdtempSync(path.join(w.scratch, 'mono-'));
  git(w.scratch, 'clone', '--quiet', w.bare, work);
  for (const [i, dir] of ['apps/web', 'apps/api', 'libs/core'].entries()) {
    mkdirSync(path.join(work, dir), { recursive: true });
    writeFileSync(path.join(work, dir, 'file.txt'), dir);
    git(work, 'add', '-A');
    git(work, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', `commit ${i}`);
  }
  git(work, 'push', '--quiet', 'origin', 'HEAD:main');
  rmSync(work, { recursive: true, force: true });
});
test.after.always(() => w?.stop());

async function job(body: Record<string, unknown>, run: string): Promise<{ attempt: any; log: string }> {
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'checkout', ...body, hints: { step: { kind: 'script', script: { run } } } });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  await finished(w, res.body.id, 60_000);
  const attempt = (await attemptsOf(w, res.body.id))[0];
  const log = (await logLines(w, res.body.id, attempt.id)).map((l) => l.content ?? l.text ?? l.line ?? '').join('\n');
  return { attempt, log };
}

test('bad sparse paths and depths are refused with 400 naming the field', async (t) => {
  const post = (body: Record<string, unknown>) => w.api.post(`/projects/${w.projectId}/jobs`, { description: 'bad', ...body });
  for (const [sparse, field] of [
    [['../etc'], 'workspace.sparse[0]'],
    [['apps', '/abs'], 'workspace.sparse[1]'],
    [['apps/*'], 'workspace.sparse[0]'],
    [[], 'workspace.sparse'],
    ['apps', 'workspace.sparse'],
  ] as const) {
    const res = await post({ workspace: { sparse } });
    t.is(res.statusCode, 400, JSON.stringify(sparse));
    t.true(res.body.message.includes(`"${field}"`), res.body.message);
  }
  for (const depth of [0, -1, 1.5, 'one']) {
    const res = await post({ git: { depth } });
    t.is(res.statusCode, 400, String(depth));
    t.true(res.body.message.includes('"git.depth"'), res.body.message);
  }
});

test.serial('workspace.sparse checks out only its folders (and the top files); the workspace report says so', async (t) => {
  const { attempt, log } = await job({ workspace: { sparse: ['apps/web'] } }, 'find . -path ./.git -prune -o -path ./.svc -prune -o -type f -print | sort');
  t.is(attempt.status, 'succeeded', log);
  t.regex(log, /\.\/apps\/web\/file\.txt/);
  t.regex(log, /\.\/README\.md/);
  t.notRegex(log, /apps\/api|libs\/core/);
  t.regex(log, /sparse: apps\/web/);
  t.like(attempt.git.workspace, { mode: 'isolated', reused: false, checkout: { copy_on_write: false, sparse: ['apps/web'], depth: null } });
});

test.serial('git.depth cuts the history the checkout holds; the workspace report says so', async (t) => {
  const { attempt, log } = await job({ git: { depth: 1 } }, 'git rev-list --count HEAD; cat libs/core/file.txt; echo; git status --porcelain | wc -l');
  t.is(attempt.status, 'succeeded', log);
  t.regex(log, /^1$/m, 'one commit of history');
  t.regex(log, /^libs\/core$/m, 'the whole tree');
  t.regex(log, /^0$/m, 'clean');
  t.regex(log, /depth 1/);
  t.is(attempt.git.workspace.checkout.depth, 1);
  t.is(attempt.git.resolved_sha, git(w.bare, 'rev-parse', 'main'));

  const full = await job({}, 'git rev-list --count HEAD');
  t.regex(full.log, /^4$/m, 'without depth, all four commits');
  t.is(full.attempt.git.workspace ?? null, null, 'a fresh isolated workspace without sparse or depth reports nothing');
});

test.serial('sparse and depth together, on a branch the job makes, with a commit pushed', async (t) => {
  const { attempt, log } = await job(
    { workspace: { sparse: ['libs'] }, git: { depth: 2, branch: 'cut/${job_id}', commit: 'auto', push: 'on_success' } },
    'echo more > libs/core/more.txt',
  );
  t.is(attempt.status, 'succeeded', log);
  t.true(attempt.git.pushed, log);
  const branch = attempt.git.resolved_branch;
  t.is(git(w.bare, 'show', `${branch}:libs/core/more.txt`), 'more');
  t.is(git(w.bare, 'show', `${branch}:apps/web/file.txt`), 'apps/web', 'the folders left out of the checkout are still in the commit');
});
