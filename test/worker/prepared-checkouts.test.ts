import test from 'ava';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RepoCache, type CacheGit } from '../../core/repo-cache.ts';
import { cacheGit } from '../../core/repo-cache-shared.ts';
import { mountedLowers } from '../../core/prepared-checkouts.ts';
import { WorkspaceOverlay, overlayOf, overlayUnavailable, sweepOverlays } from '../../plugins/worker/overlay.ts';

/** Prepared checkouts of the repository cache and the overlays mounted over them (issue 35): made once, never written, bounded, swept. */
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' }).trim();
const signal = new AbortController().signal;
const noEnv = () => Promise.resolve({});
const mounted = (dir: string) => readFileSync('/proc/self/mountinfo', 'utf8').includes(` ${dir} `);

function origin(scratch: string): { url: string; commit(file: string, text: string | Buffer): string } {
  const work = path.join(scratch, 'origin-work');
  const bare = path.join(scratch, 'origin.git');
  git(scratch, 'init', '--quiet', '-b', 'main', work);
  git(scratch, 'init', '--quiet', '--bare', '-b', 'main', bare);
  return {
    url: `file://${bare}`,
    commit(file, text) {
      writeFileSync(path.join(work, file), text);
      git(work, 'add', '-A');
      git(work, 'commit', '--quiet', '-m', file);
      git(work, 'push', '--quiet', '--force', bare, 'HEAD:main');
      return git(work, 'rev-parse', 'HEAD');
    },
  };
}

const scratchDir = (t: { teardown(fn: () => void): void }) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-prepared-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

const overlays = async () => (await overlayUnavailable()) === null;

test('a prepared checkout: made once per commit and owner, its index refreshed (status reads clean), the mirror untouched', async (t) => {
  const scratch = scratchDir(t);
  const o = origin(scratch);
  const sha = o.commit('a.txt', 'a');
  const cache = new RepoCache(path.join(scratch, 'cache'), 1 << 30, cacheGit);
  const mirror = await cache.prepare(o.url, 'main', noEnv, signal);
  const prepared = await cache.checkout(o.url, sha, null, signal);
  t.is(readFileSync(path.join(prepared.tree, 'a.txt'), 'utf8'), 'a');
  t.false(existsSync(path.join(mirror, 'index')), "the mirror's own index is never written");
  const env = { ...process.env, GIT_INDEX_FILE: prepared.index };
  // The index matches the tree by its stat data alone (no file read, no entry left racy).
  const changed = execFileSync('git', ['--git-dir', mirror, '--work-tree', prepared.tree, 'diff-files', '--name-only'], { env, encoding: 'utf8' });
  t.is(changed, '');
  t.is(execFileSync('git', ['--git-dir', mirror, 'ls-files', '--debug'], { env, encoding: 'utf8' }).match(/size: 0\b/g), null, 'no entry smudged as racy');
  const made = statSync(path.join(path.dirname(prepared.tree), 'bytes')).mtimeMs;
  const again = await cache.checkout(o.url, sha, null, signal);
  t.deepEqual(again, prepared);
  t.is(statSync(path.join(path.dirname(prepared.tree), 'bytes')).mtimeMs, made, 'not made twice');
  const owned = await cache.checkout(o.url, sha, { uid: 4242, gid: 4242 }, signal);
  t.not(owned.tree, prepared.tree);
  t.is(statSync(path.join(owned.tree, 'a.txt')).uid, process.getuid?.() === 0 ? 4242 : statSync(path.join(owned.tree, 'a.txt')).uid);
});

test('a caller leaving a fetch others joined stops only its own wait: the fetch goes on for them', async (t) => {
  const scratch = scratchDir(t);
  const o = origin(scratch);
  o.commit('a.txt', 'a');
  let fetches = 0;
  const slowGit: CacheGit = async (args, call) => {
    if (args.includes('fetch')) {
      fetches++;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    return cacheGit(args, call);
  };
  const cache = new RepoCache(path.join(scratch, 'cache'), 1 << 30, slowGit);
  const leaving = new AbortController();
  const first = cache.prepare(o.url, 'main', noEnv, leaving.signal);
  const second = cache.prepare(o.url, 'main', noEnv, signal);
  setTimeout(() => leaving.abort('the first attempt was cancelled'), 100);
  await t.throwsAsync(first);
  const mirror = await second;
  t.is(fetches, 1, 'one fetch, joined');
  t.true(existsSync(path.join(mirror, 'HEAD')));
  t.truthy(git(mirror, 'rev-parse', 'refs/heads/main'));

  // Every caller leaving stops it.
  const a = new AbortController();
  const b = new AbortController();
  o.commit('b.txt', 'b');
  const joined = [cache.prepare(o.url, 'main', noEnv, a.signal), cache.prepare(o.url, 'main', noEnv, b.signal)];
  setTimeout(() => (a.abort('a'), b.abort('b')), 100);
  for (const p of joined) await t.throwsAsync(p);
});

test('an overlay over a prepared checkout: the attempt writes its own layer, never the prepared tree; unmounted and removed after', async (t) => {
  if (!(await overlays())) return t.pass('no overlayfs here (not root)');
  const scratch = scratchDir(t);
  const o = origin(scratch);
  const sha = o.commit('a.txt', 'a');
  const cache = new RepoCache(path.join(scratch, 'cache'), 1 << 30, cacheGit);
  await cache.prepare(o.url, 'main', noEnv, signal);
  const prepared = await cache.checkout(o.url, sha, null, signal);
  const dir = path.join(scratch, 'ws', 'attempt');
  mkdirSync(dir, { recursive: true });
  const overlay = new WorkspaceOverlay(dir);
  await overlay.mount(prepared.tree);
  t.teardown(() => overlay.unmount());
  t.true(mounted(dir));
  t.true((await mountedLowers()).has(prepared.tree));
  writeFileSync(path.join(dir, 'a.txt'), 'changed');
  writeFileSync(path.join(dir, 'new.txt'), 'new');
  rmSync(path.join(dir, 'a.txt'));
  t.is(readFileSync(path.join(prepared.tree, 'a.txt'), 'utf8'), 'a');
  t.false(existsSync(path.join(prepared.tree, 'new.txt')));
  await overlay.unmount();
  t.false(mounted(dir));
  t.false(existsSync(overlayOf(dir)));
  t.deepEqual(readdirSync(dir), []);
});

test('eviction removes the prepared checkouts used longest ago, never one an overlay is mounted on', async (t) => {
  if (!(await overlays())) return t.pass('no overlayfs here (not root)');
  const scratch = scratchDir(t);
  const o = origin(scratch);
  const shas = [0, 1, 2].map((i) => o.commit('big.bin', randomBytes(600 * 1024)));
  // Room for the mirror and about one tree.
  const cache = new RepoCache(path.join(scratch, 'cache'), 2_600 * 1024, cacheGit);
  await cache.prepare(o.url, 'main', noEnv, signal);
  const first = await cache.checkout(o.url, shas[0], null, signal);
  const dir = path.join(scratch, 'ws', 'attempt');
  mkdirSync(dir, { recursive: true });
  const overlay = new WorkspaceOverlay(dir);
  await overlay.mount(first.tree);
  t.teardown(() => overlay.unmount());
  const second = await cache.checkout(o.url, shas[1], null, signal);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const third = await cache.checkout(o.url, shas[2], null, signal);
  t.true(existsSync(first.tree), 'mounted: kept');
  t.false(existsSync(second.tree), 'used longest ago and not mounted: removed');
  t.true(existsSync(third.tree), 'just asked for: kept');
});

test('overlays a stopped worker left mounted are unmounted at start; a live one is left alone', async (t) => {
  if (!(await overlays())) return t.pass('no overlayfs here (not root)');
  const scratch = scratchDir(t);
  const lower = path.join(scratch, 'lower');
  mkdirSync(lower);
  writeFileSync(path.join(lower, 'f'), 'f');
  const root = path.join(scratch, 'workspaces');
  const [crashed, live] = ['crashed', 'live'].map((name) => path.join(root, name));
  const overlaysMade = [crashed, live].map((dir) => (mkdirSync(dir, { recursive: true }), new WorkspaceOverlay(dir)));
  for (const ov of overlaysMade) await ov.mount(lower);
  t.teardown(async () => {
    for (const ov of overlaysMade) await ov.unmount();
  });
  // A pid no process has.
  writeFileSync(path.join(overlayOf(crashed), 'pid'), '999999999');
  const swept = await sweepOverlays(root);
  t.deepEqual(swept, [crashed]);
  t.false(mounted(crashed));
  t.false(existsSync(overlayOf(crashed)));
  t.true(mounted(live));
});
