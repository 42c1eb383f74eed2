/**
 * `svc job diff`: the patch to stdout exactly as recorded when piped, coloured and escaped on a
 * terminal (a real pseudo-terminal, through util-linux `script`), `--stat`, `--json`, the latest
 * attempt found when none is named; then end to end against a real server with a recorded diff.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { AttemptControlToken, type AttemptDiff } from '../../core/ports/attempts.ts';
import { newUser, setup, type Ctx } from '../orgs/helpers.ts';
import { BIN, page, runCli, showRun, startFake, tempHome, type FakeApi } from './helpers.ts';

const PATCH = [
  'diff --git a/app.txt b/app.txt',
  'index 1111111..2222222 100644',
  '--- a/app.txt',
  '+++ b/app.txt',
  '@@ -1,2 +1,2 @@ first',
  ' one',
  '-two',
  '+2 \u001b]0;owned\u0007 title',
  '',
].join('\n');
const DIFF = {
  job_id: 'web-0a1b2c3d',
  attempt_id: '9b2f2a4e-0000-4000-8000-000000000002',
  attempt_number: 2,
  format: 'patch',
  base_sha: '1'.repeat(40),
  head_sha: '2'.repeat(40),
  uncommitted: true,
  stats: { files: 3, additions: 1, deletions: 1 },
  files: [
    { path: 'app.txt', status: 'modified', additions: 1, deletions: 1, binary: false },
    { path: 'logo.png', status: 'added', additions: 0, deletions: 0, binary: true },
    { path: 'new.txt', old_path: 'old.txt', status: 'renamed', additions: 0, deletions: 0, binary: false },
  ],
  patch: PATCH,
  truncated: true,
  note: 'the patch is cut at 1.0 MiB (worker.diff.max_patch_bytes), after its last whole line: 2.0 MiB of 3.0 MiB left out; every file is listed with its counts',
  patch_bytes: 3 * 1024 * 1024,
  omitted_bytes: 2 * 1024 * 1024,
  limits: { max_patch_bytes: 1024 * 1024, max_files: 3000 },
  recorded_at: '2025-01-01T00:00:00.000Z',
};
const SUMMARY = `attempt 2 of job web-0a1b2c3d: 3 files changed, +1 -1 from ${'1'.repeat(12)} to ${'2'.repeat(12)} (uncommitted work included)`;

let fake: FakeApi;
let home = '';
test.before(async () => {
  home = await tempHome();
  fake = await startFake();
  fake
    .on('GET', '/jobs/web-0a1b2c3d', { body: { id: 'web-0a1b2c3d', project_id: 'proj_1' } })
    .on('GET', '/projects/proj_1/jobs/web-0a1b2c3d/attempts', { body: page([{ attempt_number: 2 }]) })
    .on('GET', '/jobs/web-0a1b2c3d/attempts/2/diff', (r) => {
      if (r.query.format === 'stat') {
        const { patch: _p, ...stat } = DIFF;
        return { body: { ...stat, format: 'stat', truncated: false, note: null } };
      }
      return { body: DIFF };
    })
    .on('GET', '/jobs/web-0a1b2c3d/attempts/7/diff', {
      status: 404,
      body: { statusCode: 404, error: 'Not Found', message: 'attempt 7 of job web-0a1b2c3d not found' },
    });
});
test.after.always(async () => {
  await fake?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

const env = () => ({ SVC_API_URL: fake.url, SVC_TOKEN: 'tok' });
const svc = (args: string[]) => runCli(home, args, env());

/** The CLI on a pseudo-terminal: util-linux `script` gives it a tty for stdout (and folds stderr in). */
function onTerminal(args: string[], extra: Record<string, string> = {}): Promise<string> {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const line = [process.execPath, BIN, ...args].map(quote).join(' ');
  const clean = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TERM: 'xterm', ...env(), ...extra };
  return new Promise((resolve, reject) => {
    execFile('script', ['-qec', line, '/dev/null'], { env: clean, timeout: 60_000 }, (error, stdout) =>
      error ? reject(error) : resolve(stdout.replace(/\r\n/g, '\n')),
    );
  });
}

test.serial('piped: the patch exactly as recorded on stdout (a file for git apply); the summary and the note on stderr', async (t) => {
  fake.requests.length = 0;
  const args = ['job', 'diff', 'web-0a1b2c3d'];
  const r = await svc(args);
  t.is(r.code, 0, showRun(args, r));
  t.is(r.stdout, PATCH, 'nothing added, nothing escaped, no colour');
  t.is(r.stderr, `svc: ${SUMMARY}\nsvc: ${DIFF.note}\n`);
  t.deepEqual(
    fake.requests.map((q) => [q.path, q.query]),
    [
      ['/jobs/web-0a1b2c3d', {}],
      ['/projects/proj_1/jobs/web-0a1b2c3d/attempts', { limit: '1' }],
      ['/jobs/web-0a1b2c3d/attempts/2/diff', { format: 'patch' }],
    ],
    'without --attempt, the latest attempt',
  );
});

test.serial('--stat: the summary, then each file with its status letter and counts; --attempt names the attempt', async (t) => {
  fake.requests.length = 0;
  const args = ['job', 'diff', 'web-0a1b2c3d', '--stat', '--attempt', '2'];
  const r = await svc(args);
  t.is(r.code, 0, showRun(args, r));
  t.is(r.stdout, [SUMMARY, ' M app.txt           | +1 -1', ' A logo.png          | binary', ' R old.txt → new.txt |', ''].join('\n'));
  t.is(r.stderr, '');
  t.deepEqual(
    fake.requests.map((q) => [q.path, q.query]),
    [['/jobs/web-0a1b2c3d/attempts/2/diff', { format: 'stat' }]],
  );
  const json = await svc(['job', 'diff', 'web-0a1b2c3d', '--attempt', '2', '--json']);
  t.deepEqual(JSON.parse(json.stdout), DIFF);
});

test.serial('on a terminal: additions green, deletions red, hunk headers cyan, and a control sequence in a changed file shown, not obeyed', async (t) => {
  const out = await onTerminal(['job', 'diff', 'web-0a1b2c3d', '--attempt', '2']);
  t.true(out.includes('\u001b[1mdiff --git a/app.txt b/app.txt\u001b[0m'), JSON.stringify(out));
  t.true(out.includes('\u001b[36m@@ -1,2 +1,2 @@\u001b[0m first'));
  t.true(out.includes('\u001b[31m-two\u001b[0m'));
  t.true(out.includes('\u001b[32m+2 \\x1b]0;owned\\x07 title\u001b[0m'), 'the escape from the file is printed as text');
  t.false(out.includes('\u001b]0;owned'), 'it never reaches the terminal');
  t.true(out.includes(`svc: ${SUMMARY}`));

  const stat = await onTerminal(['job', 'diff', 'web-0a1b2c3d', '--attempt', '2', '--stat']);
  t.true(stat.includes(' M app.txt           | \u001b[32m+1\u001b[0m \u001b[31m-1\u001b[0m'), JSON.stringify(stat));

  const noColor = await onTerminal(['job', 'diff', 'web-0a1b2c3d', '--attempt', '2'], { NO_COLOR: '1' });
  t.false(/\u001b\[\d+m/.test(noColor), 'NO_COLOR: no colour');
  t.true(noColor.includes('+2 \\x1b]0;owned\\x07 title'), 'still escaped on a terminal');
});

test.serial('an attempt without a diff, and bad flags', async (t) => {
  const missing = await svc(['job', 'diff', 'web-0a1b2c3d', '--attempt', '7']);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /attempt 7 of job web-0a1b2c3d not found/);
  const bad = await svc(['job', 'diff', 'web-0a1b2c3d', '--attempt', 'last']);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /--attempt must be a non-negative integer, got "last"/);
  const none = await svc(['job', 'diff']);
  t.is(none.code, 2);
  const help = await svc(['job', '--help']);
  t.regex(help.stdout, /diff ID \[--attempt N\] \[--stat\]/);
});

test.serial('end to end: the diff a worker recorded, read by its org through svc job diff; another org is told the job does not exist', async (t) => {
  t.timeout(120_000);
  let ctx: Ctx | undefined;
  try {
    ctx = await setup();
    const owner = await newUser(ctx, 'cli-diff-owner');
    const stranger = await newUser(ctx, 'cli-diff-stranger');
    const org = (await owner.api.post('/orgs', { name: 'Diff e2e' })).body.id;
    const project = (await owner.api.post('/projects', { org_id: org, name: 'Diffs', slug: 'diffe' })).body.id;
    const job = (await owner.api.post(`/projects/${project}/jobs`, { description: 'change app.txt' })).body;
    const { attempt } = (await owner.api.post(`/jobs/${job.id}/claim`, {})).body;
    const recorded: AttemptDiff = {
      base_sha: '1'.repeat(40),
      head_sha: '2'.repeat(40),
      uncommitted: false,
      files: [{ path: 'app.txt', status: 'modified', additions: 1, deletions: 1, binary: false }],
      files_total: 1,
      additions: 1,
      deletions: 1,
      patch: PATCH,
      patch_bytes: Buffer.byteLength(PATCH),
      patch_truncated: false,
      max_patch_bytes: 1024 * 1024,
      max_files: 3000,
    };
    await ctx.srv.server.app.container
      .resolve(AttemptControlToken)
      .recordDiff({ jobId: job.id, attemptId: attempt.id, leaseToken: attempt.lease_token }, recorded);
    const done = await owner.api.post(`/jobs/${job.id}/attempts/${attempt.id}/complete`, { lease_token: attempt.lease_token, result: { status: 'success' } });
    t.is(done.statusCode, 200, JSON.stringify(done.body));

    const url = ctx.srv.url;
    const real = (args: string[], token = owner.token) => runCli(home, args, { SVC_API_URL: url, SVC_TOKEN: token });
    const from = `from ${'1'.repeat(12)} to ${'2'.repeat(12)}`;
    const patch = await real(['job', 'diff', job.id]);
    t.is(patch.code, 0, showRun(['job', 'diff', job.id], patch));
    t.is(patch.stdout, PATCH);
    t.is(patch.stderr, `svc: attempt 1 of job ${job.id}: 1 file changed, +1 -1 ${from}\n`);
    const stat = await real(['job', 'diff', job.id, '--stat', '--attempt', '1']);
    t.is(stat.stdout, `attempt 1 of job ${job.id}: 1 file changed, +1 -1 ${from}\n M app.txt | +1 -1\n`);

    const theirs = await real(['job', 'diff', job.id, '--attempt', '1'], stranger.token);
    t.is(theirs.code, 1);
    t.regex(theirs.stderr, new RegExp(`job ${job.id} not found`));
    const latest = await real(['job', 'diff', job.id], stranger.token);
    t.is(latest.code, 1);
    t.regex(latest.stderr, new RegExp(`job ${job.id} not found`));
  } finally {
    await ctx?.srv.stop();
  }
});
