import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFile, lstat, mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { CacheGit } from './repo-cache.ts';

/**
 * Prepared checkouts of the repository cache (docs/workspaces.md, "Copy-on-write working trees"):
 * per mirror, commit and owner, the commit's working tree written once, with an index of it
 * refreshed once, beside the mirror (`<key>.checkouts/<sha>-u<uid>/{tree,index}`). Attempts mount
 * it as the lower layer of an overlay (plugins/worker/overlay.ts) and never write into it: the
 * cache root is the worker's alone (0700), so an attempt's user cannot reach it but through the
 * overlay. Each is made in a folder of its own and renamed into place, so no reader sees it half
 * made; its size is kept in `bytes` so the cache counts it without walking its files; its `.used`
 * marker orders eviction (RepoCache.evict), which never removes one an overlay is mounted on.
 */

export interface PreparedCheckout {
  /** The working tree (the overlay's lower layer). */
  tree: string;
  /** The git index of `tree`, refreshed: copied into each attempt's git dir, `git status` reads no file. */
  index: string;
}

/** Who owns the files: the attempt's user, so it may write them through the overlay without a copy of every file. */
export interface Owner {
  uid: number;
  gid: number;
}

const CHECKOUTS = '.checkouts';
/** Git's index marks an entry written in the same second as the index "racy" (re-read on every status): the refresh waits this long. */
const RACY_MS = 1100;

export const checkoutsOf = (mirror: string) => `${mirror.replace(/\.git$/, '')}${CHECKOUTS}`;
export const isCheckoutsFolder = (name: string) => name.endsWith(CHECKOUTS);

/** The prepared checkout of `sha` in `mirror` owned by `owner` (null: the server's own user), made if missing. */
export async function preparedCheckout(git: CacheGit, mirror: string, sha: string, owner: Owner | null, signal: AbortSignal): Promise<PreparedCheckout> {
  const dir = path.join(checkoutsOf(mirror), `${sha}-u${owner?.uid ?? process.getuid?.() ?? 0}`);
  const ready = { tree: path.join(dir, 'tree'), index: path.join(dir, 'index') };
  await dropUnlessDirectory(checkoutsOf(mirror));
  await dropUnlessDirectory(dir);
  await dropUnlessDirectory(ready.tree);
  if (await exists(path.join(dir, 'bytes'))) {
    await touch(dir);
    return ready;
  }
  await mkdir(checkoutsOf(mirror), { recursive: true, mode: 0o700 });
  const building = `${dir}.new-${randomUUID().slice(0, 8)}`;
  try {
    const tree = path.join(building, 'tree');
    await mkdir(tree, { recursive: true });
    const began = Date.now();
    // The mirror's own index is never written: GIT_INDEX_FILE is the prepared one.
    const env = { GIT_INDEX_FILE: path.join(building, 'index') };
    await git(['--work-tree', tree, 'read-tree', '--reset', '-u', sha], { cwd: mirror, env, signal });
    if (owner) await chownTree(tree, owner);
    const wait = began + RACY_MS - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    await git(['--work-tree', tree, 'update-index', '-q', '--refresh'], { cwd: mirror, env, signal }).catch(() => undefined);
    await writeFile(path.join(building, 'bytes'), String(await treeBytes(tree)));
    await rename(building, dir).catch(async (err: NodeJS.ErrnoException) => {
      // Another attempt made it first: theirs is as good.
      if (!(await exists(path.join(dir, 'bytes')))) throw err;
    });
  } finally {
    await rm(building, { recursive: true, force: true });
  }
  await touch(dir);
  return ready;
}

/** Copies a prepared checkout's index into a git dir. */
export const copyIndex = (prepared: PreparedCheckout, gitDir: string) => copyFile(prepared.index, path.join(gitDir, 'index'));

/** Every prepared checkout of the cache: its folder, recorded size and last use. */
export async function listCheckouts(root: string): Promise<{ dir: string; bytes: number; usedAt: number }[]> {
  const folders = (await readdir(root).catch(() => [])).filter(isCheckoutsFolder);
  const found = await Promise.all(
    folders.map(async (folder) => {
      const names = (await readdir(path.join(root, folder)).catch(() => [])).filter((n) => !n.includes('.'));
      return Promise.all(
        names.map(async (name) => {
          const dir = path.join(root, folder, name);
          const bytes = Number(await readFile(path.join(dir, 'bytes'), 'utf8').catch(() => '0')) || 0;
          const usedAt = (await stat(`${dir}.used`).catch(() => null))?.mtimeMs ?? 0;
          return { dir, bytes, usedAt };
        }),
      );
    }),
  );
  return found.flat();
}

/** Removes a prepared checkout (renamed away first, so no attempt mounts it half removed). */
export async function removeCheckout(dir: string): Promise<void> {
  const gone = `${dir}.gone-${randomUUID().slice(0, 8)}`;
  await rename(dir, gone).catch(() => undefined);
  await rm(gone, { recursive: true, force: true });
  await rm(`${dir}.used`, { force: true });
}

/** The mounts of this process's namespace now (/proc/self/mountinfo): where each is, its type, and an overlay's lower layers. */
export async function mounts(): Promise<{ point: string; type: string; lowers: string[] }[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  // mountinfo writes space, tab, newline and backslash as octal escapes.
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return info
    .split('\n')
    .filter((line) => line.includes(' - '))
    .map((line) => {
      const [before, after] = line.split(' - ');
      const [type, , options] = after.split(' ');
      const lower = type === 'overlay' ? /(?:^|,)lowerdir=([^,]+)/.exec(options ?? '')?.[1] : undefined;
      return { point: unescape(before.split(' ')[4] ?? ''), type, lowers: lower ? lower.split(':').map(unescape) : [] };
    });
}

/** The lower layers of the overlays mounted now. */
export const mountedLowers = async (): Promise<Set<string>> => new Set((await mounts()).flatMap((m) => m.lowers));

/**
 * Removes `p` when it is anything but a real directory (a link planted in the cache's place, a
 * file): the cache never follows a link out of its root, it makes the folder again.
 */
export async function dropUnlessDirectory(p: string): Promise<void> {
  const info = await lstat(p).catch(() => null);
  if (info && !info.isDirectory()) await rm(p, { force: true });
}

export const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

/** Marks `dir` used now (its `.used` marker's mtime, which eviction orders by). */
export async function touch(dir: string): Promise<void> {
  const marker = `${dir}.used`;
  const now = new Date();
  await utimes(marker, now, now).catch(() => writeFile(marker, ''));
}

function chownTree(dir: string, owner: Owner): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile('chown', ['-R', '-h', '-P', `${owner.uid}:${owner.gid}`, '--', dir], { env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' } }, (err) =>
      err ? reject(err) : resolve(),
    ),
  );
}

/** The tree's size on disk (du: one walk, once, when it is made). */
function treeBytes(dir: string): Promise<number> {
  return new Promise((resolve) =>
    execFile('du', ['-sb', '--', dir], { env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' } }, (err, stdout) =>
      resolve(err ? 0 : Number(String(stdout).split('\t')[0]) || 0),
    ),
  );
}
