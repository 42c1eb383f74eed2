import { execFile } from 'node:child_process';
import { lchown, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { WorkerFailure } from './failure.ts';

export interface RunAs {
  uid: number;
  gid: number;
}

/**
 * The user an attempt's process runs as, in every runtime: `worker.run_as_uid`/`run_as_gid`
 * (SVC_RUN_AS_UID); null (or 0) is the server's own user. Only a root server can hand the workspace
 * over, and the local runtime switches users only as root; containers run as it regardless.
 */
export function runAsOf(uid: number | null, gid: number | null): RunAs | null {
  if (uid === null || uid === 0) return null;
  return { uid, gid: gid ?? uid };
}

export const isRoot = () => process.getuid?.() === 0;

/** Whether `user` may search (x) a directory with this owner and mode. Supplementary groups are not considered: a dropped process has none. */
function searchable(user: RunAs, s: { uid: number; gid: number; mode: number }): boolean {
  if (s.uid === user.uid) return (s.mode & 0o100) !== 0;
  if (s.gid === user.gid) return (s.mode & 0o010) !== 0;
  return (s.mode & 0o001) !== 0;
}

/** The first folder above `dir` that `user` may not pass (folders that do not exist yet are skipped), or null. */
export async function closedAncestor(dir: string, user: RunAs): Promise<{ path: string; mode: number; uid: number } | null> {
  for (let up = path.dirname(dir); ; up = path.dirname(up)) {
    const s = await stat(up).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    if (s && !searchable(user, s)) return { path: up, mode: s.mode & 0o777, uid: s.uid };
    if (up === path.dirname(up)) return null;
  }
}

/**
 * Hands the workspace to the user the process runs as: everything in it becomes theirs (symlinks
 * themselves, never their targets). Unsandboxed, every directory above it must let that user through
 * (else the attempt fails saying which one and what to change); the sandbox binds it where it is.
 */
export async function handOver(dir: string, user: RunAs, opts: { sandboxed: boolean; chown?: () => Promise<void> }): Promise<void> {
  const closed = opts.sandboxed ? null : await closedAncestor(dir, user);
  if (closed) {
    throw new WorkerFailure(
      `processes run as uid ${user.uid}, which cannot reach the workspace: ${closed.path} is mode ${closed.mode.toString(8).padStart(4, '0')} owned by uid ${closed.uid}. ` +
        "Set worker.workspace_root (SVC_WORKSPACE_ROOT) to a directory that user can reach, or worker.run_as_uid (SVC_RUN_AS_UID) to null to run as the server's own user",
    );
  }
  // chown(1) walks a 20k-file checkout in a third of the time Node's calls take (one thread, no
  // event-loop turn per file); the walk below is the fallback where it is missing or fails.
  // A copy-on-write workspace hands over only its own layer (overlay.ts): a chown of every file would copy every file up.
  if (opts.chown) return opts.chown();
  if (!(await chownCommand(dir, user))) await chownTree(dir, user);
}

/** `chown -R -h -P`: links themselves, never their targets, and no link followed down. */
function chownCommand(dir: string, user: RunAs): Promise<boolean> {
  return new Promise((resolve) => {
    execFile('chown', ['-R', '-h', '-P', `${user.uid}:${user.gid}`, '--', dir], { env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' } }, (err) => resolve(!err));
  });
}

/** Everything under `dir` to `user`: links themselves (lchown), never their targets, and no link followed down. */
async function chownTree(dir: string, user: RunAs): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  // All at once: each is one call on libuv's pool, and a walk awaiting them in turn pays an event-loop turn per file.
  await Promise.all([
    lchown(dir, user.uid, user.gid),
    ...entries.map((entry) => (entry.isDirectory() ? chownTree(path.join(dir, entry.name), user) : lchown(path.join(dir, entry.name), user.uid, user.gid))),
  ]);
}
