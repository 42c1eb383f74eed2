import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AttemptWork } from '../../core/ports/attempts.ts';
import { processExists } from '../../core/process.ts';
import { Aborted } from '../../core/aborted.ts';

/**
 * Where an attempt works (docs/workspaces.md). `isolated` and unset: a fresh directory per attempt,
 * removed after it. `job`: the job's own directory, which its later attempts on this worker reuse.
 * `session`: one directory per `workspace.key`, which the jobs naming that key use one at a time.
 * Reused directories live under `<root>/reuse/<org>/<project>/`, so no key reaches another
 * project's or org's; each is locked while an attempt uses it and removed once idle.
 */
export type WorkspaceMode = 'job' | 'session' | 'isolated';

export interface Workspace {
  dir: string;
  /**
   * The worker's own folder beside the workspace (`<dir>.store`): the git mirror the checkout
   * borrows its objects from, and the exchange folder the sandboxed git writes to. It lives and
   * goes with the workspace; a job sees it read-only.
   */
  store: string;
  mode: WorkspaceMode;
  /** The directory held what an earlier attempt (job) or job (session) left. */
  reused: boolean;
  /** Whether the directory outlives the attempt. */
  kept: boolean;
  /** Gives the directory back (marks it used now, drops the lock). */
  release(): Promise<void>;
}

const REUSE = 'reuse';
const STORE = '.store';
export const storeOf = (dir: string) => `${dir}${STORE}`;
const LOCK_POLL_MS = 100;
/** Session keys become directory names: readable characters kept, a hash keeps distinct keys apart. */
const safeName = (key: string) => `${key.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 60)}-${createHash('sha256').update(key).digest('hex').slice(0, 12)}`;

export function workspaceMode(work: AttemptWork): WorkspaceMode {
  const mode = work.job.workspace?.mode;
  return mode === 'job' || mode === 'session' ? mode : 'isolated';
}

/** The session key, for log lines. */
export const sessionKey = (work: AttemptWork): string => String(work.job.workspace?.key ?? '');

function reusedDir(root: string, work: AttemptWork, mode: 'job' | 'session'): string {
  const name = mode === 'job' ? work.job.id : safeName(sessionKey(work));
  return path.join(root, REUSE, work.project.org_id, work.project.id, mode, name);
}

interface LockOwner {
  pid: number;
  job_id: string;
  attempt_id: string;
}

/** Takes the directory's lock if free (or left by a process that is gone); the current owner otherwise. */
async function tryLock(dir: string, owner: LockOwner): Promise<LockOwner | null> {
  const lock = `${dir}.lock`;
  await mkdir(path.dirname(dir), { recursive: true });
  try {
    await mkdir(lock);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const held = await readFile(path.join(lock, 'owner.json'), 'utf8')
      .then((text) => JSON.parse(text) as LockOwner)
      .catch(() => null);
    // A lock whose owner file is not written yet is being taken right now.
    if (!held) return { pid: 0, job_id: 'unknown', attempt_id: 'unknown' };
    if (held.pid === process.pid || processExists(held.pid)) return held;
    await rm(lock, { recursive: true, force: true });
    return tryLock(dir, owner);
  }
  await writeFile(path.join(lock, 'owner.json'), JSON.stringify(owner));
  return null;
}

async function unlock(dir: string): Promise<void> {
  await rm(`${dir}.lock`, { recursive: true, force: true });
}

/** Records the directory's last use (its `.used` marker's mtime), which the idle sweep reads. */
async function touch(dir: string): Promise<void> {
  const marker = `${dir}.used`;
  const now = new Date();
  await utimes(marker, now, now).catch(() => writeFile(marker, ''));
}

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

/**
 * The attempt's workspace. A reused one is locked first: while another job holds it, `waiting` is
 * told once who holds it, and the attempt waits (until `signal` aborts it).
 */
export async function openWorkspace(root: string, work: AttemptWork, signal: AbortSignal, waiting: (holder: string) => Promise<void>): Promise<Workspace> {
  const mode = workspaceMode(work);
  if (mode === 'isolated') {
    const dir = path.join(root, `${work.job.id}-a${work.attempt.attempt_number}-${work.attempt.id.slice(0, 8)}`);
    await mkdir(dir, { recursive: true });
    return { dir, store: storeOf(dir), mode, reused: false, kept: false, release: async () => undefined };
  }
  const dir = reusedDir(root, work, mode);
  const me: LockOwner = { pid: process.pid, job_id: work.job.id, attempt_id: work.attempt.id };
  let told = false;
  for (;;) {
    const holder = await tryLock(dir, me);
    if (!holder) break;
    if (!told) {
      told = true;
      await waiting(holder.job_id);
    }
    if (signal.aborted) throw new Aborted(String(signal.reason ?? 'aborted'));
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
  try {
    const reused = await exists(dir);
    await mkdir(dir, { recursive: true });
    await touch(dir);
    return {
      dir,
      store: storeOf(dir),
      mode,
      reused,
      kept: true,
      release: async () => {
        await touch(dir);
        await unlock(dir);
      },
    };
  } catch (err) {
    await unlock(dir);
    throw err;
  }
}

/**
 * Removes reused workspaces unused for `idleMs` (their `.used` marker), skipping any in use (locked).
 * Returns the directories removed.
 */
export async function sweepWorkspaces(root: string, idleMs: number, now = Date.now()): Promise<string[]> {
  const removed: string[] = [];
  const base = path.join(root, REUSE);
  const list = (dir: string) => readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const org of await list(base)) {
    for (const project of await list(path.join(base, org.name))) {
      for (const mode of ['job', 'session']) {
        const parent = path.join(base, org.name, project.name, mode);
        for (const entry of await list(parent)) {
          if (!entry.isDirectory() || entry.name.endsWith('.lock') || entry.name.endsWith(STORE)) continue;
          const dir = path.join(parent, entry.name);
          const used = await stat(`${dir}.used`).catch(() => null);
          if (used && now - used.mtimeMs < idleMs) continue;
          if (await tryLock(dir, { pid: process.pid, job_id: 'sweep', attempt_id: 'sweep' })) continue;
          try {
            await rm(dir, { recursive: true, force: true });
            await rm(storeOf(dir), { recursive: true, force: true });
            await rm(`${dir}.used`, { force: true });
            removed.push(dir);
          } finally {
            await unlock(dir);
          }
        }
      }
    }
  }
  return removed;
}
