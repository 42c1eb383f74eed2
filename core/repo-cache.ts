import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { redactUrl } from './git-access.ts';
import type { Metrics } from './metrics.ts';
import { processExists } from './process.ts';

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
}

const LOCK_POLL_MS = 50;
const FETCH_REFSPECS = ['+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*'];
const FULL_SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/i;

/** A URL's mirror name: a hash of the URL without its credentials, so every credential of one repository shares it. */
export const cacheKey = (url: string): string => createHash('sha256').update(redactUrl(url)).digest('hex').slice(0, 32);

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

/** A ref no remote has: `ls-remote` of it connects and authenticates, and lists nothing. */
const ACCESS_PROBE = 'refs/svc/access-probe';

export class RepoCache {
  private hits;
  private misses;
  private rebuilds;
  private lastSize = 0;
  /** Per mirror, this process's running fetch and the one queued behind it. */
  private readonly fetching = new Map<string, { running: Promise<void> | null; next: Promise<void> | null }>();

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
    await this.git(['ls-remote', '--quiet', '--', url, ACCESS_PROBE], { cwd: this.root, env: await connect(), signal });
    if (!(await exists(path.join(mirror, 'HEAD')))) {
      this.misses?.inc();
      await this.fetchOnce(url, connect, signal);
    } else if (want && FULL_SHA.test(want) && (await this.has(mirror, want, signal))) {
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

  /** Bytes the cache holds (what eviction last counted, recounted when older than a scrape). */
  async size(): Promise<number> {
    this.lastSize = await dirSize(this.root).catch(() => this.lastSize);
    return this.lastSize;
  }

  /** Every object reachable and readable (`git fsck`: run only after something failed, it reads every object). */
  private sound(mirror: string, signal: AbortSignal): Promise<boolean> {
    return this.git(['fsck', '--no-dangling', '--no-progress'], { cwd: mirror, signal }).then(
      () => true,
      () => false,
    );
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
   */
  private fetchOnce(url: string, connect: () => Promise<Record<string, string>>, signal: AbortSignal): Promise<void> {
    const key = cacheKey(url);
    const queue = this.fetching.get(key) ?? { running: null, next: null };
    this.fetching.set(key, queue);
    if (queue.next) return queue.next;
    const before = queue.running?.catch(() => undefined) ?? Promise.resolve();
    const next: Promise<void> = before.then(() => {
      queue.next = null;
      queue.running = next;
      return this.locked(this.mirrorPath(url), signal, () => this.fetch(url, connect, signal));
    });
    queue.next = next;
    void next
      .catch(() => undefined)
      .then(() => {
        if (queue.running === next) queue.running = null;
      });
    return next;
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

  /** Removes the mirrors used longest ago until the cache fits `maxBytes`; never `keep`, nor a mirror being fetched. */
  private async evict(keep: string): Promise<void> {
    let total = await this.size();
    if (total <= this.maxBytes) return;
    const mirrors = (await readdir(this.root)).filter((name) => name.endsWith('.git')).map((name) => path.join(this.root, name));
    const used = await Promise.all(mirrors.map(async (m) => ({ m, at: (await stat(`${m}.used`).catch(() => null))?.mtimeMs ?? 0 })));
    for (const { m } of used.sort((a, b) => a.at - b.at)) {
      if (total <= this.maxBytes) break;
      if (m === keep || !(await tryLock(`${m}.lock`))) continue;
      try {
        const bytes = await dirSize(m);
        await this.remove(m);
        total -= bytes;
      } finally {
        await rm(`${m}.lock`, { recursive: true, force: true });
      }
    }
    this.lastSize = total;
  }
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

async function touch(mirror: string): Promise<void> {
  const marker = `${mirror}.used`;
  const now = new Date();
  await utimes(marker, now, now).catch(() => writeFile(marker, ''));
}

async function dirSize(dir: string): Promise<number> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
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
