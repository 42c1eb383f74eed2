import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { attemptsOf, finished, git, logLines, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * What an attempt changed (docs/diffs.md): recorded by the worker from the checkout when the attempt
 * ends, committed or not, and read back through GET /jobs/{id}/attempts/{n}/diff. Real git, a
 * file:// repository, script steps that make the changes.
 */
let w: WorkerWorld;
const LIMITS = { max_patch_bytes: 4096, max_files: 6 };
test.before(async () => {
  w = await workerWorld('wdiff', { overrides: { worker: { diff: LIMITS } } });
  // The repository the jobs start from: a few files to change, rename and delete.
  const clone = mkdtempSync(path.join(w.scratch, 'seed-'));
  execFileSync('git', ['clone', '--quiet', w.bare, clone]);
  writeFileSync(path.join(clone, 'app.txt'), 'one\ntwo\nthree\nfour\nfive\n');
  writeFileSync(path.join(clone, 'old-name.txt'), 'a file that is only renamed\nwith a second line\nand a third\n');
  writeFileSync(path.join(clone, 'gone.txt'), 'to be deleted\n');
  writeFileSync(path.join(clone, '.gitignore'), 'build/\n');
  git(clone, 'add', '-A');
  git(clone, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--quiet', '-m', 'seed');
  git(clone, 'push', '--quiet', 'origin', 'HEAD:main');
});
test.after.always(() => w?.stop());

async function run(script: string, gitControls: Record<string, unknown> = {}): Promise<{ job: any; attempt: any }> {
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'diff',
    git: gitControls,
    hints: { step: { kind: 'script', script: { run: script } } },
  });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  const job = await finished(w, res.body.id);
  return { job, attempt: (await attemptsOf(w, job.id))[0] };
}

const CHANGES = [
  "printf 'one\\n2\\nthree\\nfour\\nfive\\nsix\\n' > app.txt",
  'git mv old-name.txt new-name.txt',
  'rm gone.txt',
  "printf 'fresh\\n' > added.txt",
  "printf '\\000\\001\\002binary' > blob.bin",
  'mkdir -p build && echo ignored > build/out.txt',
].join(' && ');

test.serial('committed work: every file with its status and counts, the patch, the commit it ends at; stat leaves the patch out', async (t) => {
  const { job, attempt } = await run(CHANGES, { branch: 'diff/${job_id}', commit: 'auto', push: 'on_success' });
  t.is(job.phase, 'done', String(attempt.error));
  const res = await w.api.get(`/jobs/${job.id}/attempts/1/diff`);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  const diff = res.body;
  t.like(diff, {
    job_id: job.id,
    attempt_id: attempt.id,
    attempt_number: 1,
    format: 'patch',
    base_sha: attempt.git.resolved_sha,
    head_sha: attempt.git.commits[0],
    uncommitted: false,
    truncated: false,
    note: null,
    omitted_bytes: 0,
    limits: LIMITS,
  });
  t.deepEqual(diff.files, [
    { path: 'added.txt', status: 'added', additions: 1, deletions: 0, binary: false },
    { path: 'app.txt', status: 'modified', additions: 2, deletions: 1, binary: false },
    { path: 'blob.bin', status: 'added', additions: 0, deletions: 0, binary: true },
    { path: 'gone.txt', status: 'deleted', additions: 0, deletions: 1, binary: false },
    { path: 'new-name.txt', old_path: 'old-name.txt', status: 'renamed', additions: 0, deletions: 0, binary: false },
  ]);
  t.deepEqual(diff.stats, { files: 5, additions: 3, deletions: 2 });
  // The patch is git's own: the same as `git diff -M` between the two commits in the repository it was pushed to.
  t.is(diff.patch, `${git(w.bare, 'diff', '-M', '--no-color', diff.base_sha, diff.head_sha)}\n`);
  t.regex(diff.patch, /^diff --git a\/app\.txt b\/app\.txt\n[\s\S]*@@ -1,5 \+1,6 @@\n one\n-two\n\+2\n three\n four\n five\n\+six\n/m);
  t.regex(diff.patch, /Binary files \/dev\/null and b\/blob\.bin differ/);
  t.is(diff.patch_bytes, Buffer.byteLength(diff.patch));
  t.false(diff.patch.includes('build/out.txt'), 'ignored files are not part of the work');

  const stat = await w.api.get(`/jobs/${job.id}/attempts/1/diff?format=stat`);
  t.is(stat.statusCode, 200);
  t.is(stat.body.patch, undefined);
  t.deepEqual(stat.body.files, diff.files);
  t.like(stat.body, { format: 'stat', truncated: false, stats: diff.stats });

  const receipt = await w.api.get(`/jobs/${job.id}/receipt`);
  t.true('diff' in receipt.body.timing.phases, 'reading the diff is a phase of the receipt');
  const lines = (await logLines(w, job.id, attempt.id)).map((l) => l.line);
  t.true(lines.includes(`diff against ${diff.base_sha.slice(0, 12)}: 5 files changed, +3 -2`), lines.join('\n'));
});

test.serial("uncommitted work counts, with the attempt's own commits; svc's files and ignored ones do not", async (t) => {
  const script = [
    "printf 'committed by the script\\n' > mine.txt && git add mine.txt && git -c user.name=s -c user.email=s@x commit -qm mine",
    "printf 'left uncommitted\\n' >> app.txt",
    "printf 'untracked\\n' > untracked.txt",
    'mkdir -p build && echo ignored > build/out.txt',
  ].join(' && ');
  const { job, attempt } = await run(script);
  t.is(job.phase, 'done', String(attempt.error));
  t.like(attempt.git.uncommitted, { reason: 'git.commit is manual' });
  const diff = (await w.api.get(`/jobs/${job.id}/attempts/1/diff`)).body;
  t.like(diff, { uncommitted: true, base_sha: attempt.git.resolved_sha });
  t.not(diff.head_sha, diff.base_sha, "the script's own commit is the checkout's HEAD");
  t.deepEqual(
    diff.files.map((f: any) => [f.path, f.status, f.additions]),
    [
      ['app.txt', 'modified', 1],
      ['mine.txt', 'added', 1],
      ['untracked.txt', 'added', 1],
    ],
  );
  t.false(/\.svc\//.test(diff.patch), "the worker's own files are never part of the work");
});

test.serial('what the checkout configures cannot change what is parsed: prefixes, colours, external diff, text conversion, odd names', async (t) => {
  const marker = path.join(w.scratch, 'external-diff-ran');
  const script = [
    'git config diff.noprefix true',
    'git config diff.mnemonicPrefix true',
    'git config color.ui always',
    'git config color.diff always',
    'git config diff.context 0',
    `git config diff.external "touch ${marker}"`,
    'printf "*.txt diff=conv\\n*.dat diff\\n" > .gitattributes',
    `git config diff.conv.textconv "touch ${marker}; cat"`,
    "printf 'tab\\tname\\n' > \"$(printf 'a\\tb.txt')\"",
    "printf 'unicode\\n' > 'ünï.txt'",
    "printf 'text\\000with a nul\\n' > data.dat",
    "printf 'one\\ntwo\\nthree\\nfour\\nfive\\nSIX\\n' > app.txt",
  ].join(' && ');
  const { job, attempt } = await run(script);
  t.is(job.phase, 'done', String(attempt.error));
  const res = await w.api.get(`/jobs/${job.id}/attempts/1/diff`);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  const diff = res.body;
  t.deepEqual(
    diff.files.map((f: any) => f.path),
    ['.gitattributes', 'a\tb.txt', 'app.txt', 'data.dat', 'ünï.txt'],
    'names exactly as they are (read with -z)',
  );
  t.false(diff.patch.includes('\u001b['), 'no colour codes');
  t.regex(diff.patch, /^diff --git a\/app\.txt b\/app\.txt$/m, 'a/ and b/ prefixes whatever the config says');
  t.regex(diff.patch, /^@@ -3,3 \+3,4 @@/m, 'three lines of context whatever diff.context says');
  t.regex(diff.patch, /text\uFFFDwith a nul/, 'a NUL in a file diffed as text is stored as U+FFFD');
  t.throws(() => execFileSync('test', ['-e', marker]), undefined, 'no external diff or text conversion ran');
});

test.serial('a patch over worker.diff.max_patch_bytes is cut after a whole line and says how much was left out; files over max_files too', async (t) => {
  const script = ['seq 1 2000 > big.txt', ...Array.from({ length: 8 }, (_, i) => `echo ${i} > f${i}.txt`)].join(' && ');
  const { job, attempt } = await run(script);
  t.is(job.phase, 'done', String(attempt.error));
  const diff = (await w.api.get(`/jobs/${job.id}/attempts/1/diff`)).body;
  t.true(diff.truncated);
  t.is(diff.files.length, LIMITS.max_files);
  t.deepEqual(diff.stats, { files: 9, additions: 2008, deletions: 0 });
  const kept = Buffer.byteLength(diff.patch);
  t.true(kept <= LIMITS.max_patch_bytes && kept > LIMITS.max_patch_bytes - 20, String(kept));
  t.true(diff.patch.endsWith('\n'));
  t.true(diff.patch_bytes > 10_000);
  t.is(diff.omitted_bytes, diff.patch_bytes - kept);
  t.is(
    diff.note,
    `the patch is cut at 4.0 KiB (worker.diff.max_patch_bytes), after its last whole line: ${sizeOf(diff.omitted_bytes)} of ${sizeOf(diff.patch_bytes)} left out; ` +
      '6 of 9 files are listed (worker.diff.max_files); the stats count every file',
  );
  const stat = (await w.api.get(`/jobs/${job.id}/attempts/1/diff?format=stat`)).body;
  t.is(stat.note, '6 of 9 files are listed (worker.diff.max_files); the stats count every file', 'the patch is not part of a stat answer');
  const lines = (await logLines(w, job.id, attempt.id)).map((l) => l.line);
  t.true(lines.some((l) => l.endsWith(`(patch kept up to 4096 of ${diff.patch_bytes} bytes)`)));
});

test.serial("recording the diff leaves the checkout's own index alone: a retry in the same workspace finds what was staged, and only that", async (t) => {
  // Attempt 1 stages one new file, leaves another untracked and fails; attempt 2 runs in the same checkout.
  const script = [
    'if [ -e staged.txt ]; then',
    '  test "$(git status --porcelain -- staged.txt loose.txt)" = "$(printf \'A  staged.txt\\n?? loose.txt\')" && echo index kept;',
    'else',
    '  echo s > staged.txt && git add staged.txt && echo l > loose.txt && exit 1;',
    'fi',
  ].join(' ');
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'retry in the same workspace',
    workspace: { mode: 'job' },
    hints: { max_attempts: 2, step: { kind: 'script', script: { run: script } } },
  });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  const job = await finished(w, res.body.id);
  const [second, first] = await attemptsOf(w, job.id);
  t.like(first, { status: 'failed', error: 'exited with code 1' });
  t.is(job.phase, 'done', String(second.error));
  t.true((await logLines(w, job.id, second.id)).some((l) => l.line === 'index kept'));
  const one = (await w.api.get(`/jobs/${job.id}/attempts/1/diff`)).body;
  t.deepEqual(
    one.files.map((f: any) => f.path),
    ['loose.txt', 'staged.txt'],
    'a failed attempt has a diff too',
  );
  const two = (await w.api.get(`/jobs/${job.id}/attempts/2/diff`)).body;
  t.is(two.base_sha, one.base_sha, 'nothing was committed: the reused checkout starts where the first did');
  t.deepEqual(
    two.files.map((f: any) => f.path),
    ['loose.txt', 'staged.txt'],
    'uncommitted work an earlier attempt left in the workspace is part of the diff',
  );
});

test.serial('a .git/index the job turned into a link is never read through: the diff is made from the working tree all the same', async (t) => {
  // (A FIFO there is refused too: test/worker/diff-unit.test.ts.)
  const secret = path.join(w.scratch, 'host-secret');
  writeFileSync(secret, 'not for the job\n');
  const { job, attempt } = await run(`echo changed >> app.txt && rm .git/index && ln -s ${secret} .git/index`);
  t.is(job.phase, 'done', String(attempt.error));
  const lines = (await logLines(w, job.id, attempt.id)).map((l) => l.line);
  t.false(
    lines.some((l) => l.startsWith('the diff was not recorded')),
    lines.join('\n'),
  );
  const diff = (await w.api.get(`/jobs/${job.id}/attempts/1/diff`)).body;
  t.deepEqual(
    diff.files.map((f: any) => [f.path, f.additions]),
    [['app.txt', 1]],
  );
});

const sizeOf = (bytes: number) =>
  bytes < 1024 ? `${bytes} bytes` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
