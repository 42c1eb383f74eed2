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

/**
 * Hands the workspace to the user the process runs as: every directory above it must let that user
 * through (else the attempt fails saying which one and what to change), and everything in it
 * becomes theirs (symlinks themselves, never their targets).
 */
export async function handOver(dir: string, user: RunAs): Promise<void> {
  for (let up = path.dirname(dir); ; up = path.dirname(up)) {
    const s = await stat(up);
    if (!searchable(user, s)) {
      throw new WorkerFailure(
        `processes run as uid ${user.uid}, which cannot reach the workspace: ${up} is mode ${(s.mode & 0o777).toString(8).padStart(4, '0')} owned by uid ${s.uid}. ` +
          "Set worker.workspace_root (SVC_WORKSPACE_ROOT) to a directory that user can reach, or worker.run_as_uid (SVC_RUN_AS_UID) to null to run as the server's own user",
      );
    }
    if (up === path.dirname(up)) break;
  }
  await chownTree(dir, user);
}

async function chownTree(dir: string, user: RunAs): Promise<void> {
  await lchown(dir, user.uid, user.gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(full, user);
    else await lchown(full, user.uid, user.gid);
  }
}
