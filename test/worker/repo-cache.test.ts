import test from 'ava';
import { chmodSync, existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sharedRepoCache } from '../../core/repo-cache-shared.ts';
import { attemptsOf, finished, git, logLines, scriptJob, workerWorld, type WorkerWorld } from './helpers.ts';

/** The worker's repository cache end to end (issue 35): attempts clone from it, share it, and never write into it. */
let w: WorkerWorld;
let cacheRoot: string;
test.before(async () => {
  w = await workerWorld('wcache', { overrides: { worker: { concurrency: 2 } } });
  cacheRoot = path.join(w.scratch, 'workspaces', '.repo-cache');
});
test.after.always(() => w?.stop());

const mirrors = () => readdirSync(cacheRoot).filter((n) => n.endsWith('.git'));

async function run(script: string, hints: Record<string, unknown> = {}): Promise<{ job: any; attempt: any; log: string }> {
  const id = await scriptJob(w, script, hints);
  const job = await finished(w, id, 60_000);
  const attempt = (await attemptsOf(w, id))[0];
  const log = (await logLines(w, id, attempt.id)).map((l) => l.content ?? l.text ?? l.line ?? '').join('\n');
  return { job, attempt, log };
}

test.serial('two attempts at once on one repository: both start from the one mirror of the cache', async (t) => {
  const [a, b] = await Promise.all([run('git log --oneline | head -1'), run('git log --oneline | head -1')]);
  t.is(a.attempt.status, 'succeeded', a.log);
  t.is(b.attempt.status, 'succeeded', b.log);
  t.is(mirrors().length, 1);
  t.regex(a.log, /through the repository cache/);
  t.is(a.attempt.git.resolved_sha, git(w.bare, 'rev-parse', 'main'));
  const metrics = await w.srv.server.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
  t.regex(metrics.payload, /svc_repo_cache_bytes [1-9]/);
  t.regex(metrics.payload, /svc_repo_cache_(hits|misses)_total [1-9]/);
});

test.serial('a force-pushed branch: the next attempt starts from its new tip', async (t) => {
  const work = path.join(w.scratch, 'rewrite');
  git(w.scratch, 'init', '--quiet', '-b', 'main', work);
  writeFileSync(path.join(work, 'rewritten.txt'), 'new history');
  git(work, 'add', '-A');
  git(work, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'rewritten');
  git(work, 'push', '--quiet', '--force', w.bare, 'HEAD:main');
  const after = await run('cat rewritten.txt');
  t.is(after.attempt.status, 'succeeded', after.log);
  t.is(after.attempt.git.resolved_sha, git(work, 'rev-parse', 'HEAD'));
});

test.serial('a mirror deleted, then one corrupted, under the running worker: rebuilt, never used', async (t) => {
  const [mirror] = mirrors();
  rmSync(path.join(cacheRoot, mirror), { recursive: true, force: true });
  const deleted = await run('cat rewritten.txt');
  t.is(deleted.attempt.status, 'succeeded', deleted.log);
  t.true(existsSync(path.join(cacheRoot, mirror, 'HEAD')));
  // The file's content goes bad; the commit stays readable, so the cache believes it holds it.
  const blob = git(w.bare, 'rev-parse', 'main:rewritten.txt');
  const loose = path.join(cacheRoot, mirror, 'objects', blob.slice(0, 2), blob.slice(2));
  if (existsSync(loose)) {
    chmodSync(loose, 0o644);
    writeFileSync(loose, 'garbage');
  } else {
    for (const pack of readdirSync(path.join(cacheRoot, mirror, 'objects', 'pack')).filter((p) => p.endsWith('.pack'))) {
      const file = path.join(cacheRoot, mirror, 'objects', 'pack', pack);
      chmodSync(file, 0o644);
      writeFileSync(file, 'garbage');
    }
  }
  // A prepared checkout of the commit, made before the corruption, holds its files already (and
  // serves the attempt without reading the mirror): gone, the next attempt must read the mirror.
  for (const folder of readdirSync(cacheRoot).filter((n) => n.endsWith('.checkouts'))) rmSync(path.join(cacheRoot, folder), { recursive: true, force: true });
  const corrupted = await run('cat rewritten.txt');
  t.is(corrupted.attempt.status, 'succeeded', corrupted.log);
  t.regex(corrupted.log, /is broken \(git fsck\): removed, cloning again/);
  t.regex(corrupted.log, /new history/);
});

test.serial('a mistyped ref fails at once, without a git fsck of the mirror', async (t) => {
  const cache = sharedRepoCache(w.srv.kernel.container)!;
  let verified = 0;
  const verify = cache.verify.bind(cache);
  cache.verify = (...args) => (verified++, verify(...args));
  try {
    const id = (
      await w.api.post(`/projects/${w.projectId}/jobs`, {
        description: 'typo',
        git: { ref: 'mian' },
        hints: { step: { kind: 'script', script: { run: 'true' } } },
      })
    ).body.id;
    await finished(w, id, 60_000);
    const [attempt] = await attemptsOf(w, id);
    t.is(attempt.status, 'failed');
    t.regex(attempt.error, /git ref 'mian' \(explicit\) is not a branch, tag or commit/);
    t.is(verified, 0);
  } finally {
    cache.verify = verify;
  }
});

test.serial("a job's writes never reach the cache or the next attempt", async (t) => {
  const [mirror] = mirrors();
  const cached = path.join(cacheRoot, mirror);
  // The job commits, and tries to write into the objects its checkout borrows and into the cache itself.
  const leak = await run(
    [
      'echo secret > leak.txt && git add leak.txt && git -c user.name=j -c user.email=j@j commit -qm leak && git rev-parse HEAD',
      'for alt in $(cat .git/objects/info/alternates); do cp .git/objects/*/* "$alt/" 2>/dev/null; touch "$alt/planted" 2>/dev/null; done',
      `touch ${cached}/planted ${cached}/objects/planted 2>/dev/null; true`,
    ].join('\n'),
  );
  t.is(leak.attempt.status, 'succeeded', leak.log);
  const sha = /^([0-9a-f]{40})$/m.exec(leak.log)?.[1];
  t.truthy(sha, leak.log);
  t.false(existsSync(path.join(cached, 'planted')));
  t.false(existsSync(path.join(cached, 'objects', 'planted')));
  t.throws(() => git(cached, 'cat-file', '-e', sha!), undefined, 'the commit is not in the cache');
  const next = await run(`test ! -e leak.txt && ! git cat-file -e ${sha} 2>/dev/null && echo clean`);
  t.is(next.attempt.status, 'succeeded', next.log);
  t.regex(next.log, /^clean$/m);
});
