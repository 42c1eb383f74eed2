import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { SYSTEM_HOME } from '../../core/db/embedded-place.ts';
import { closedAncestor, isRoot, type RunAs } from './run-as.ts';

/**
 * Where workspaces live: `worker.workspace_root` when set, else `<data_dir>/workspaces`. A root
 * server whose attempts run unsandboxed as another user cannot hand that user a folder inside a
 * private home (a checkout in /root): then, as the embedded database does, the workspaces move to
 * a folder of their own under /var/lib/svc, and `note` says so at start. The sandbox binds the
 * workspace wherever it is, so sandboxed attempts never need this.
 */
export async function workspaceRoot(opts: {
  configured: string | null;
  dataDir: string;
  user: RunAs | null;
  sandboxed: boolean;
  systemHome?: string;
}): Promise<{ root: string; note: string | null }> {
  if (opts.configured) return { root: path.resolve(opts.configured), note: null };
  const root = path.join(opts.dataDir, 'workspaces');
  if (opts.sandboxed || !opts.user || !isRoot()) return { root, note: null };
  const closed = await closedAncestor(root, opts.user);
  if (!closed) return { root, note: null };
  const home = opts.systemHome ?? SYSTEM_HOME;
  const moved = path.join(home, 'workspaces', createHash('sha256').update(path.resolve(opts.dataDir)).digest('hex').slice(0, 16));
  await mkdir(moved, { recursive: true, mode: 0o755 });
  return {
    root: moved,
    note: `attempts run as uid ${opts.user.uid}, who cannot enter ${closed.path}, so workspaces are kept in ${moved} (set worker.workspace_root to choose)`,
  };
}
