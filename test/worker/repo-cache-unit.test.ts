import test from 'ava';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync, closeSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkout } from '../../adapters/builder/git-checkout.ts';
import { RepoCache } from '../../core/repo-cache.ts';
import { cacheGit } from '../../core/repo-cache-shared.ts';
import { Metrics } from '../../core/metrics.ts';
import { privateGitServer } from '../builds/git-http.ts';

/** core/repo-cache.ts on its own, against file:// repositories: fetches, locks, eviction, a broken mirror, and a build's checkout from it. */
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' }).trim();
const signal = new AbortController().signal;
const noEnv = () => Promise.resolve({});

function origin(scratch: string, name = 'origin'): { bare: string; commit(file: string, text: string): string } {
  const work = path.join(scratch, `${name}-work`);
  const bare = path.join(scratch, `${name}.git`);
  git(scratch, 'init', '--quiet', '-b', 'main', work);
  git(scratch, 'init', '--quiet', '--bare', '-b', 'main', bare);
  return {
    bare,
    commit(file, text) {
      writeFileSync(path.join(work, file), text);
      git(work, 'add', '-A');
      git(work, 'commit', '--quiet', '-m', file);
      git(work, 'push', '--quiet', '--force', bare, 'HEAD:main');
      return git(work, 'rev-parse', 'HEAD');
    },
  };
}

/** Overwrites object files of a mirror (all, or the loose object `only`) with garbage of the same size (a disk that went bad under it). */
function corrupt(mirror: string, only?: string): void {
  const objects = path.join(mirror, 'objects');
  for (const dir of readdirSync(objects)) {
    if (dir === 'info') continue;
    for (const file of readdirSync(path.join(objects, dir))) {
      const p = path.join(objects, dir, file);
      if (file.endsWith('.idx') || (only && `${dir}${file}` !== only)) continue;
      chmodSync(p, 0o644);
      const fd = openSync(p, 'r+');
      const size = statSync(p).size;
      writeSync(fd, Buffer.alloc(size, 0x5a), 0, size, 0);
      closeSync(fd);
    }
  }
}

const scratchDir = (t: { teardown(fn: () => void): void }) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-repo-cache-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

test('a mirror per URL holding what the remote has, with neither the URL nor credentials stored in it', async (t) => {
  const scratch = scratchDir(t);
  const o = origin(scratch);
  const first = o.commit('a.txt', 'a');
  const metrics = new Metrics();
  const cache = new RepoCache(path.join(scratch, 'cache'), 1 << 30, cacheGit, metrics);
  const mirror = await cache.prepare(`file://${o.bare}`, 'main', noEnv, signal);
  t.is(git(mirror, 'rev-parse', 'refs/heads/main'), first);
  t.is(mirror, cache.mirrorPath(`file://${o.bare}`));
  const grep = spawnSync('grep', ['-rl', o.bare, mirror], { encoding: 'utf8' });
  t.is(grep.status, 1, `no file of the mirror names the remote: ${grep.stdout}`);
  const second = o.commit('b.txt', 'b');
  t.is(git(await cache.prepare(`file://${o.bare}`, 'main', noEnv, signal), 'rev-parse', 'refs/heads/main'), second, 'a moved branch is fetched');
  t.regex(
    await metrics.registry.metrics(),
    /svc_repo_cache_misses_total 1\n[\s\S]*svc_repo_cache_hits_total 1\n|svc_repo_cache_hits_total 1\n[\s\S]*svc_repo_cache_misses_total 1\n/,
  );
  t.regex(await metrics.registry.metrics(), /svc_repo_cache_bytes [1-9]\d*/);
});

test('a force-pushed branch: the mirror takes the new history and drops the branches the remote pruned', async (t) => {
  const scratch = scratchDir(t);
  const o = origin(scratch);
  o.commit('a.txt', 'a');
  git(o.bare, 'branch', 'gone', 'main');
  const cache = new RepoCache(path.join(scratch, 'cache'), 1 << 30, cacheGit);
  const url = `file://${o.bare}`;
  await cache.prepare(url, 'main', noEnv, signal);
  const work = path.join(scratch, 'rewrite');
  git(scratch, 'init', '--quiet', '-b', 'main', work);
  writeFileSync(path.join(work, 'other.txt'), 'unrelated history');
  git(work, 'add', '-A');
  git(work, 'commit', '--quiet', '-m', 'rewritten');
  git(work, 'push', '--quiet', '--force', o.bare, 'HEAD:main');
  git(o.bare, 'branch', '-D', 'gone');
  const mirror = await cache.prepare(url, 'main', noEnv, signal);
  t.is(git(mirror, 'rev-parse', 'refs/heads/main'), git(work, 'rev-parse', 'HEAD'));
  t.throws(() => git(mirror, 'rev-parse', '--verify', '--quiet', 'refs/heads/gone'));
});

test('concurrent prepares, from two caches on one folder as two workers would: one mirror, every caller served, nothing half made left', async (t) => {
  const scratch = scratchDir(t);
  const o = origin(scratch);
  const sha = o.commit('a.txt', 'a');
  const root = path.join(scratch, 'cache');
  const caches = [new RepoCache(root, 1 << 30, cacheGit), new RepoCache(root, 1 << 30, cacheGit)];
  const mirrors = await Promise.all(Array.from({ length: 6 }, (_, i) => caches[i % 2].prepare(`file://${o.bare}`, i % 3 ? 'main' : sha, noEnv, signal)));
  t.is(new Set(mirrors).size, 1);
  t.is(git(mirrors[0], 'rev-parse', 'refs/heads/main'), sha);
  t.deepEqual(
    readdirSync(root).filter((n) => !n.endsWith('.used')),
    [path.basename(mirrors[0])],
  );
});

test('a full SHA the mirror holds needs no fetch; one it lacks is fetched', async (t) => {
  const scratch = scratchDir(t);
  const o = origin(scratch);
  const first = o.commit('a.txt', 'a');
  const cache = new RepoCache(path.join(scratch, 'cache'), 1 << 30, cacheGit);
  const url = `file://${o.bare}`;
  const mirror = await cache.prepare(url, first, noEnv, signal);
  const second = o.commit('b.txt', 'b');
  await cache.prepare(url, first, noEnv, signal);
  t.throws(() => git(mirror, 'cat-file', '-e', second), undefined, 'not fetched: the mirror had the commit');
  await cache.prepare(url, second, noEnv, signal);
  t.notThrows(() => git(mirror, 'cat-file', '-e', second));
});

test('above max_bytes the mirror used longest ago is removed, never the one being used', async (t) => {
  const scratch = scratchDir(t);
  const a = origin(scratch, 'a');
  const b = origin(scratch, 'b');
  a.commit('a.txt', 'a'.repeat(50_000));
  b.commit('b.txt', 'b'.repeat(50_000));
  const cache = new RepoCache(path.join(scratch, 'cache'), 1, cacheGit);
  const ma = await cache.prepare(`file://${a.bare}`, 'main', noEnv, signal);
  t.true(existsSync(ma), 'the only mirror stays although the cache is over its bound');
  const mb = await cache.prepare(`file://${b.bare}`, 'main', noEnv, signal);
  t.false(existsSync(ma), 'the least recently used mirror went');
  t.true(existsSync(mb));
});

test('a deleted mirror is made again; a corrupted one is found by verify, removed and rebuilt, never used', async (t) => {
  const scratch = scratchDir(t);
  const o = origin(scratch);
  const sha = o.commit('a.txt', 'a'.repeat(10_000));
  const cache = new RepoCache(path.join(scratch, 'cache'), 1 << 30, cacheGit);
  const url = `file://${o.bare}`;
  const mirror = await cache.prepare(url, 'main', noEnv, signal);
  rmSync(mirror, { recursive: true, force: true });
  t.is(git(await cache.prepare(url, 'main', noEnv, signal), 'rev-parse', 'main'), sha);
  corrupt(mirror);
  t.false(await cache.verify(url, signal));
  t.false(existsSync(mirror), 'the broken mirror is gone');
  await cache.prepare(url, 'main', noEnv, signal);
  t.is(git(mirror, 'cat-file', '-p', `${sha}:a.txt`), 'a'.repeat(10_000));
  t.true(await cache.verify(url, signal));
});

test("a build's checkout from the cache: a local clone of the mirror at the build's commit, rebuilt when the mirror is broken", async (t) => {
  const scratch = scratchDir(t);
  const o = origin(scratch);
  const sha = o.commit('Dockerfile', 'FROM scratch\n');
  const cache = new RepoCache(path.join(scratch, 'cache'), 1 << 30, cacheGit);
  const url = `file://${o.bare}`;
  const lines: string[] = [];
  const dir = path.join(scratch, 'build-1');
  await checkout(url, { env: {}, secrets: [] }, sha, dir, signal, (l) => lines.push(l), cache);
  t.is(readFileSync(path.join(dir, 'Dockerfile'), 'utf8'), 'FROM scratch\n');
  t.is(git(dir, 'rev-parse', 'HEAD'), sha);
  t.is(git(dir, 'config', 'remote.origin.url'), cache.mirrorPath(url), 'cloned from the cache, not the remote');
  // The commit stays readable (so the cache believes it holds it), the file's content does not.
  corrupt(cache.mirrorPath(url), git(o.bare, 'rev-parse', `${sha}:Dockerfile`));
  const again = path.join(scratch, 'build-2');
  await checkout(url, { env: {}, secrets: [] }, sha, again, signal, (l) => lines.push(l), cache);
  t.is(readFileSync(path.join(again, 'Dockerfile'), 'utf8'), 'FROM scratch\n');
  t.true(lines.some((l) => /mirror .* is broken \(git fsck\): removed, cloning again/.test(l)));
});

test('a private HTTPS repository: fetched with the credentials of the connection, none of them stored in the mirror', async (t) => {
  const scratch = scratchDir(t);
  const o = origin(scratch);
  const sha = o.commit('a.txt', 'a');
  const token = 'ghp_cache-test-token';
  const server = await privateGitServer(o.bare, token);
  t.teardown(() => server.stop());
  const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
  const connect = () =>
    Promise.resolve({
      GIT_SSL_CAINFO: process.env.GIT_SSL_CAINFO!,
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    });
  const cache = new RepoCache(path.join(scratch, 'cache'), 1 << 30, cacheGit);
  await t.throwsAsync(cache.prepare(server.url, 'main', () => Promise.resolve({ GIT_SSL_CAINFO: process.env.GIT_SSL_CAINFO! }), signal));
  const mirror = await cache.prepare(server.url, 'main', connect, signal);
  t.is(git(mirror, 'rev-parse', 'main'), sha);
  // The mirror holds the commit now; another caller of the same URL still needs credentials the remote takes.
  const wrong = Buffer.from('x-access-token:ghp_revoked').toString('base64');
  const strangers: Record<string, string>[] = [
    {},
    { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: `Authorization: Basic ${wrong}` },
  ];
  for (const env of strangers) {
    const stranger = () => Promise.resolve({ GIT_SSL_CAINFO: process.env.GIT_SSL_CAINFO!, ...env });
    await t.throwsAsync(cache.prepare(server.url, sha, stranger, signal), undefined, 'a cached commit is no way round the remote');
  }
  for (const secret of [token, basic, server.url]) {
    const grep = spawnSync('grep', ['-rlF', secret, path.join(scratch, 'cache')], { encoding: 'utf8' });
    t.is(grep.status, 1, `${secret} is in ${grep.stdout}`);
  }
});
