/**
 * The attempt sandbox (docs/security.md): bubblewrap around everything that runs on a workspace's
 * behalf on this machine, the attempt's process and the worker's own git commands on a checkout a
 * job has touched. Inside, the process sees the system's binaries read-only, the paths it is given
 * (its workspace read-write, the harness CLI read-only), a private /tmp, /proc of its own pid
 * namespace, and nothing else of the host: not svc's data directory, not other workspaces, not
 * /root, not the server's environment. A root server drops to the attempt's user inside
 * (setpriv), so nothing in the sandbox holds a capability.
 */
import { execFile } from 'node:child_process';
import { constants as fsConstants, existsSync } from 'node:fs';
import { access, realpath } from 'node:fs/promises';
import path from 'node:path';

export type SandboxMode = 'auto' | 'on' | 'off';
export type SandboxNetwork = 'open' | 'none';

/** `worker.sandbox` as configured (a bare mode is the shorthand for `{mode}`). */
export interface SandboxSettings {
  mode: SandboxMode;
  network: SandboxNetwork;
  /** More host paths every attempt may read (a CLI installed outside /usr, say). */
  read_only: string[];
}

/** What one sandboxed process may see beyond the system's binaries. */
export interface SandboxView {
  /** Host paths bound read-write at the same place (the workspace, an exchange folder). */
  writable: string[];
  /** Host paths bound read-only at the same place (a harness CLI, a git mirror). */
  readOnly: string[];
  network: SandboxNetwork;
  /** The user the process runs as inside; null: the caller's own (a server that is not root). */
  user: { uid: number; gid: number } | null;
}

/** The uid a root server's attempt drops to when worker.run_as_uid is unset: inside the sandbox nothing runs as root. */
export const NOBODY = { uid: 65534, gid: 65534 } as const;

const BWRAP_CANDIDATES = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'];
const SETPRIV_CANDIDATES = ['/usr/bin/setpriv', '/bin/setpriv'];
/** The host's system folders, bound read-only when present (a symlink such as /bin -> usr/bin is kept a symlink). */
const SYSTEM_PATHS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt'];

const firstExisting = (candidates: string[]) => candidates.find((p) => existsSync(p)) ?? null;

/** Where bubblewrap is, or null. */
export const bwrapPath = () => firstExisting(BWRAP_CANDIDATES);

/** Every ancestor of `p` below the root, outermost first. */
function ancestors(p: string): string[] {
  const out: string[] = [];
  for (let dir = path.dirname(p); dir !== path.dirname(dir); dir = path.dirname(dir)) out.unshift(dir);
  return out;
}

/**
 * The bubblewrap argument vector that runs `command args` in `cwd` with only `view` visible. Paths
 * bound later win, so the system folders come first, then the private /tmp, then the view's own.
 */
export function sandboxArgs(command: string, args: string[], cwd: string, view: SandboxView): { command: string; args: string[] } {
  const bwrap = bwrapPath() ?? 'bwrap';
  const out: string[] = ['--die-with-parent', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
  if (view.network === 'none') out.push('--unshare-net');
  for (const p of SYSTEM_PATHS) out.push('--ro-bind-try', p, p);
  out.push('--dev', '/dev', '--proc', '/proc', '--perms', '1777', '--tmpfs', '/tmp', '--tmpfs', '/run', '--perms', '1777', '--tmpfs', '/var/tmp');
  const made = new Set<string>(['/tmp', '/run', '/var/tmp', '/dev', '/proc', ...SYSTEM_PATHS]);
  const bind = (flag: string, p: string) => {
    // Parents bubblewrap would make private (0700) are made reachable for a dropped user.
    for (const dir of ancestors(p)) {
      if (made.has(dir) || isSystemPath(dir)) continue;
      made.add(dir);
      out.push('--perms', '0755', '--dir', dir);
    }
    made.add(p);
    out.push(flag, p, p);
  };
  for (const p of view.readOnly) bind('--ro-bind', p);
  for (const p of view.writable) bind('--bind', p);
  out.push('--chdir', cwd, '--');
  if (view.user && process.getuid?.() === 0) {
    const setpriv = firstExisting(SETPRIV_CANDIDATES) ?? 'setpriv';
    out.push(setpriv, '--reuid', String(view.user.uid), '--regid', String(view.user.gid), '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--');
  }
  out.push(command, ...args);
  return { command: bwrap, args: out };
}

/** Whether the sandbox works here: bubblewrap and setpriv present, and a trial run inside succeeds. Null when it does; else why not. */
export async function sandboxUnavailable(): Promise<string | null> {
  const bwrap = bwrapPath();
  if (!bwrap) return 'bubblewrap is not installed (apt-get install bubblewrap)';
  if (process.getuid?.() === 0 && !firstExisting(SETPRIV_CANDIDATES)) return 'setpriv is not installed (apt-get install util-linux)';
  const user = process.getuid?.() === 0 ? NOBODY : null;
  const trial = sandboxArgs('/bin/sh', ['-c', 'exit 0'], '/', { writable: [], readOnly: [], network: 'open', user });
  return new Promise((resolve) => {
    execFile(trial.command, trial.args, { timeout: 10_000 }, (err, _stdout, stderr) => {
      resolve(err ? `bubblewrap cannot start a sandbox here: ${(stderr || err.message).trim().split('\n').slice(-1)[0]}` : null);
    });
  });
}

/**
 * The host folders a command needs to be readable in the sandbox: where it is found (on `searchPath`
 * when it is a bare name), where its real file is, and for a package in node_modules that whole
 * tree. System folders are bound already and left out.
 */
export async function commandPaths(command: string, searchPath: string): Promise<string[]> {
  const found = path.isAbsolute(command) ? command : await onPath(command, searchPath);
  if (!found) return [];
  const real = await realpath(found).catch(() => null);
  const paths = new Set<string>();
  for (const p of [found, real].filter((x): x is string => !!x)) {
    const modules = p.indexOf(`${path.sep}node_modules${path.sep}`);
    paths.add(modules >= 0 ? p.slice(0, modules + '/node_modules'.length) : path.dirname(p));
  }
  return [...paths].filter((p) => !isSystemPath(p));
}

const isSystemPath = (p: string) => SYSTEM_PATHS.some((s) => p === s || p.startsWith(`${s}/`));

async function onPath(name: string, searchPath: string): Promise<string | null> {
  for (const dir of searchPath.split(':').filter((d) => path.isAbsolute(d))) {
    const candidate = path.join(dir, name);
    if (
      await access(candidate, fsConstants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  return null;
}
