import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { redactUrl } from './git-access.ts';
import type { Metrics } from './metrics.ts';
import { processExists } from './process.ts';
import {
  checkoutsOf,
  dropUnlessDirectory,
  exists,
  touch,
  isCheckoutsFolder,
  listCheckouts,
  mountedLowers,
  preparedCheckout,
  removeCheckout,
  type Owner,
  type PreparedCheckout,
} from './prepared-checkouts.ts';

/**
 * The worker's repository cache (docs/workspaces.md, "The repository cache"): one bare mirror per
 * repository URL, refreshed by an incremental fetch, from which attempts and builds clone locally
 * (hard links: nothing they write reaches it). Credentials are never stored in it: every fetch
 * names the URL on the command line, with the caller's connection environment, and writes no
 * FETCH_HEAD. A fetch holds the mirror's lock (a directory beside it, with the owner's pid, so two
 * processes on one machine take turns and a dead owner's lock is taken over); readers never wait
 * for it. Above `maxBytes` the mirrors used longest ago are removed.
 */

/** How the cache runs git: the caller's hardened git (no server environment, no global config). */
export type CacheGit = (args: string[], call: { cwd: string; env?: Record<string, string>; signal: AbortSignal }) => Promise<string>;

export interface RepoCacheSettings {
  enabled: boolean;
  /** null: `<workspace_root>/.repo-cache`. */
  path: string | null;
  max_bytes: number;
  copy_on_write: boolean;
}

const LOCK_POLL_MS = 50;
const FETCH_REFSPECS = ['+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*'];
const FULL_SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/i;

/** A URL's mirror name: a hash of the URL without its credentials, so every credential of one repository shares it. */
export const cacheKey = (url: string): string => createHash('sha256').update(redactUrl(url)).digest('hex').slice(0, 32);

export class RepoCache {
  private hits;
  private misses;
  private rebuilds;
  private lastSize = 0;
  /** Per mirror, this process's running fetch and the one queued behind it. */
  private readonly fetching = new Map<string, { running: Promise<void> | null; next: SharedFetch | null }>();

  constructor(
    readonly root: string,
    private readonly maxBytes: number,
    private readonly git: CacheGit,
    metrics?: Metrics,
  ) {
    this.hits = metrics?.counter('svc_repo_cache_hits_total', 'Attempts and builds whose repository was in the cache already (a fetch at most)');
    this.misses = metrics?.counter('svc_repo_cache_misses_total', 'Attempts and builds that had to fill the cache with a full clone');
    this.rebuilds = metrics?.counter('svc_repo_cache_rebuilds_total', 'Mirrors found corrupted or unreadable and rebuilt');
    metrics?.sampledGauge('svc_repo_cache_bytes', "Bytes on disk of the worker's repository cache", [], async () => [{ labels: {}, value: await this.size() }]);
  }

  mirrorPath(url: string): string {
    return path.join(this.root, `${cacheKey(url)}.git`);
  }

  /**
   * The mirror of `url`, holding `want` (a ref or commit) as the remote has it now: created on
   * first use, else fetched (a full SHA it holds already needs no fetch). `connect` gives the
   * environment of one connection (credentials, the address policy's check).
   *
   * The mirror is shared by every project naming the URL, so each caller first shows the remote
   * its own credentials (`ls-remote`): what the cache holds reaches only a caller the remote would
   * let read it now, never one without credentials or with revoked ones riding on another's fetch.
   */
  async prepare(url: string, want: string | null, connect: () => Promise<Record<string, string>>, signal: AbortSignal): Promise<string> {
    const mirror = this.mirrorPath(url);
    // The worker's alone: an attempt's user never walks into it (an attempt's store holds hard links to what it needs).
    await mkdir(path.dirname(this.root), { recursive: true, mode: 0o755 });
    await mkdir(this.root, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    // The remote's branches and tags: the caller's access check, and what the mirror must hold.
    const remote = await this.git(['ls-remote', '--quiet', '--heads', '--tags', '--', url], { cwd: this.root, env: await connect(), signal });
    await dropUnlessDirectory(mirror);
    if (!(await exists(path.join(mirror, 'HEAD')))) {
      this.misses?.inc();
      await this.fetchOnce(url, connect, signal);
    } else if ((want && FULL_SHA.test(want) && (await this.has(mirror, want, signal))) || (await this.holds(mirror, remote, signal))) {
      // Nothing a fetch would bring.
      this.hits?.inc();
    } else {
      this.hits?.inc();
      await this.fetchOnce(url, connect, signal);
    }
    await touch(mirror);
    await this.evict(mirror).catch(() => undefined);
    return mirror;
  }

  /**
   * After a clone or checkout from the mirror failed: whether the mirror is sound (`git fsck`). A
   * mirror that is not is removed, so the next `prepare` rebuilds it.
   */
  async verify(url: string, signal: AbortSignal): Promise<boolean> {
    const mirror = this.mirrorPath(url);
    const sound = await this.sound(mirror, signal);
    if (!sound) {
      this.rebuilds?.inc();
      await this.locked(mirror, signal, () => this.remove(mirror));
    }
    return sound;
  }

  /**
   * The prepared checkout of `sha` (a commit the mirror of `url` holds, after `prepare`) for
   * `owner`, made on first use (core/prepared-checkouts.ts); it counts in the cache's size.
   */
  async checkout(url: string, sha: string, owner: Owner | null, signal: AbortSignal): Promise<PreparedCheckout> {
    const mirror = this.mirrorPath(url);
    const prepared = await preparedCheckout(this.git, mirror, sha, owner, signal);
    await this.evict(mirror, path.dirname(prepared.tree)).catch(() => undefined);
    return prepared;
  }

  /** Bytes the cache holds: its mirrors, walked, and its prepared checkouts, as each recorded when made. */
  async size(): Promise<number> {
    const checkouts = await listCheckouts(this.root);
    const mirrors = await dirSize(this.root, (name) => !isCheckoutsFolder(name)).catch(() => this.lastSize);
    this.lastSize = mirrors + checkouts.reduce((sum, c) => sum + c.bytes, 0);
    return this.lastSize;
  }

  /** Every object reachable and readable (`git fsck`: run only after something failed, it reads every object). */
  private sound(mirror: string, signal: AbortSignal): Promise<boolean> {
    return this.git(['fsck', '--no-dangling', '--no-progress'], { cwd: mirror, signal }).then(
      () => true,
      () => false,
    );
  }

  /** Whether the mirror's branches and tags are exactly `listed` (ls-remote's lines; peeled tags aside). */
  private async holds(mirror: string, listed: string, signal: AbortSignal): Promise<boolean> {
    const lines = (text: string) =>
      text
        .split('\n')
        .map((l) => l.trim().replace(/\s+/, ' '))
        .filter((l) => l && !l.endsWith('^{}'))
        .sort();
    const own = await this.git(['for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads', 'refs/tags'], { cwd: mirror, signal }).catch(() => null);
    return own !== null && lines(own).join('\n') === lines(listed).join('\n');
  }

  private has(mirror: string, sha: string, signal: AbortSignal): Promise<boolean> {
    return this.git(['cat-file', '-e', `${sha}^{commit}`], { cwd: mirror, signal }).then(
      () => true,
      () => false,
    );
  }

  /**
   * A fetch that begins after this call: one not begun yet is joined (every caller that asked
   * before it began gets what the remote had then); otherwise one is queued behind the running one.
   * The fetch has a signal of its own: a caller whose signal aborts stops waiting for it, and it is
   * stopped only once every caller that joined it has.
   */
  private fetchOnce(url: string, connect: () => Promise<Record<string, string>>, signal: AbortSignal): Promise<void> {
    const key = cacheKey(url);
    const queue = this.fetching.get(key) ?? { running: null, next: null };
    this.fetching.set(key, queue);
    let shared = queue.next;
    // One every caller has left is never joined: it stops as it begins.
    if (!shared || shared.controller.signal.aborted) {
      const controller = new AbortController();
      const before = queue.running?.catch(() => undefined) ?? Promise.resolve();
      const done: Promise<void> = before.then(() => {
        if (queue.next === self) queue.next = null;
        queue.running = done;
        controller.signal.throwIfAborted();
        return this.locked(this.mirrorPath(url), controller.signal, () => this.fetch(url, connect, controller.signal));
      });
      shared = { done, controller, waiting: 0 };
      queue.next = shared;
      const self = shared;
      void done
        .catch(() => undefined)
        .then(() => {
          if (queue.running === done) queue.running = null;
        });
    }
    return join(shared, signal);
  }

  /** Under the lock: a fetch into the mirror, made first when missing; a mirror a fetch fails on that fsck finds broken is rebuilt once. */
  private async fetch(url: string, connect: () => Promise<Record<string, string>>, signal: AbortSignal): Promise<void> {
    const mirror = this.mirrorPath(url);
    if (!(await exists(path.join(mirror, 'HEAD')))) return this.create(url, mirror, connect, signal);
    try {
      await this.fetchInto(mirror, url, connect, signal);
    } catch (err) {
      if (await this.sound(mirror, signal)) throw err;
      this.rebuilds?.inc();
      await this.remove(mirror);
      await this.create(url, mirror, connect, signal);
    }
  }

  /** A new mirror, fetched into a folder of its own and renamed into place, so no reader sees it half made. */
  private async create(url: string, mirror: string, connect: () => Promise<Record<string, string>>, signal: AbortSignal): Promise<void> {
    const building = `${mirror}.new-${randomUUID().slice(0, 8)}`;
    try {
      await this.git(['init', '--quiet', '--bare', '--template=', building], { cwd: this.root, signal });
      for (const c of ['core.fsync=none', 'gc.auto=0', 'core.logAllRefUpdates=false']) {
        const [name, value] = c.split('=');
        await this.git(['config', name, value], { cwd: building, signal });
      }
      await this.fetchInto(building, url, connect, signal);
      await rm(mirror, { recursive: true, force: true });
      await rename(building, mirror);
    } finally {
      await rm(building, { recursive: true, force: true });
    }
  }

  private async fetchInto(mirror: string, url: string, connect: () => Promise<Record<string, string>>, signal: AbortSignal): Promise<void> {
    await this.git(['fetch', '--quiet', '--prune', '--no-write-fetch-head', '--no-auto-gc', '--', url, ...FETCH_REFSPECS], {
      cwd: mirror,
      env: await connect(),
      signal,
    });
  }

  private async remove(mirror: string): Promise<void> {
    const gone = `${mirror}.gone-${randomUUID().slice(0, 8)}`;
    await rename(mirror, gone).catch(() => undefined);
    await rm(gone, { recursive: true, force: true });
    await rm(`${mirror}.used`, { force: true });
  }

  /** Runs `fn` holding the mirror's lock (`<mirror>.lock`, its owner's pid inside), waiting while another live process or call holds it. */
  private async locked<T>(mirror: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
    const lock = `${mirror}.lock`;
    for (;;) {
      if (await tryLock(lock)) break;
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason ?? 'aborted'));
      await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
    }
    try {
      return await fn();
    } finally {
      await rm(lock, { recursive: true, force: true });
    }
  }

  /**
   * Removes what was used longest ago, mirrors and prepared checkouts alike, until the cache fits
   * `maxBytes`; never `keep` (a mirror or checkout just asked for), a checkout an overlay is mounted
   * on, nor a mirror being fetched or with a mounted checkout.
   */
  private async evict(...keep: string[]): Promise<void> {
    let total = await this.size();
    if (total <= this.maxBytes) return;
    const mounted = await mountedLowers();
    const inUse = (checkout: string) => mounted.has(path.join(checkout, 'tree'));
    const mirrors = (await readdir(this.root)).filter((name) => name.endsWith('.git')).map((name) => path.join(this.root, name));
    const checkouts = await listCheckouts(this.root);
    const entries = [
      ...(await Promise.all(mirrors.map(async (m) => ({ m, checkout: false, at: (await stat(`${m}.used`).catch(() => null))?.mtimeMs ?? 0 })))),
      ...checkouts.map((c) => ({ m: c.dir, checkout: true, at: c.usedAt })),
    ];
    for (const { m, checkout } of entries.sort((a, b) => a.at - b.at)) {
      if (total <= this.maxBytes) break;
      if (keep.includes(m)) continue;
      if (checkout) {
        if (inUse(m)) continue;
        await removeCheckout(m);
        total -= checkouts.find((c) => c.dir === m)?.bytes ?? 0;
        continue;
      }
      const its = checkouts.filter((c) => path.dirname(c.dir) === checkoutsOf(m));
      if (its.some((c) => inUse(c.dir)) || !(await tryLock(`${m}.lock`))) continue;
      try {
        const bytes = await dirSize(m);
        await this.remove(m);
        total -= bytes;
        for (const c of its) {
          await removeCheckout(c.dir);
          total -= c.bytes;
        }
      } finally {
        await rm(`${m}.lock`, { recursive: true, force: true });
      }
    }
    this.lastSize = total;
  }
}

interface SharedFetch {
  done: Promise<void>;
  controller: AbortController;
  /** Callers waiting for it whose signal has not aborted. */
  waiting: number;
}

/** Waits for a shared fetch until `signal` aborts; the last waiter to abort stops the fetch. */
function join(shared: SharedFetch, signal: AbortSignal): Promise<void> {
  shared.waiting++;
  return new Promise<void>((resolve, reject) => {
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      if (--shared.waiting === 0) shared.controller.abort(signal.reason);
      reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason ?? 'aborted')));
    };
    if (signal.aborted) return leave();
    signal.addEventListener('abort', leave, { once: true });
    shared.done.then(
      () => {
        left = true;
        signal.removeEventListener('abort', leave);
        resolve();
      },
      (err: unknown) => {
        left = true;
        signal.removeEventListener('abort', leave);
        reject(err as Error);
      },
    );
  });
}

/** Takes a lock directory if free, or left by a process that is gone (or its owner file never written, after a crash). */
async function tryLock(lock: string): Promise<boolean> {
  try {
    await mkdir(lock);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const owner = await readFile(path.join(lock, 'pid'), 'utf8').catch(() => null);
    const pid = Number(owner);
    if (owner === null) {
      // Being taken this instant, or left by a crash between mkdir and the write: stale after a while.
      const made = await stat(lock).catch(() => null);
      if (made && Date.now() - made.mtimeMs < 10_000) return false;
    } else if (pid === process.pid || processExists(pid)) return false;
    await rm(lock, { recursive: true, force: true });
    return tryLock(lock);
  }
  await writeFile(path.join(lock, 'pid'), String(process.pid));
  return true;
}

async function dirSize(dir: string, include: (name: string) => boolean = () => true): Promise<number> {
  const entries = (await readdir(dir, { withFileTypes: true }).catch(() => [])).filter((e) => include(e.name));
  const sizes = await Promise.all(
    entries.map((e) => {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) return dirSize(p);
      return stat(p).then(
        (s) => s.size,
        () => 0,
      );
    }),
  );
  return sizes.reduce((a, b) => a + b, 0);
}
