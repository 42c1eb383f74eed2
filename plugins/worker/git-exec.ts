import { sandboxArgs, type SandboxNetwork } from '../../core/sandbox.ts';
import { GIT_HARDENING } from '../../core/git-hardening.ts';
import { execGit, type GitRunner } from '../../core/git-run.ts';
import type { RunAs } from './run-as.ts';

/**
 * How the worker runs git (docs/security.md, "The worker's git"). Two kinds of repository:
 * - the **mirror**, a bare repository the worker owns beside the workspace, never writable by a
 *   job: clone, fetch and push happen there, with the project's credentials;
 * - the **checkout** in the workspace. Until a job's process has run in it (a fresh clone) its
 *   configuration is the worker's own and git runs there directly; once anything of the job may
 *   have touched it (after the process, or a reused workspace) every git command on it runs as the
 *   attempt's user inside the sandbox, without credentials or network, so whatever its config,
 *   hooks, fsmonitor or filters run, they run as the job itself.
 * Every git gets none of the server's environment and no system or global configuration.
 */

/**
 * Git on a checkout a job may have touched: as `user` (the attempt's) inside the sandbox seeing
 * only the workspace, the mirror (read-only: the checkout borrows its objects) and the exchange
 * folder, with no network. With the sandbox off it still runs as `user` when the server is root.
 */
export function checkoutGit(opts: { sandboxed: boolean; user: RunAs | null; writable: string[]; readOnly: string[] }): GitRunner {
  const network: SandboxNetwork = 'none';
  return (args, call) => {
    const full = ['-c', 'protocol.allow=never', ...GIT_HARDENING, ...args];
    if (!opts.sandboxed) return execGit('git', full, call, opts.user && process.getuid?.() === 0 ? opts.user : {});
    const wrapped = sandboxArgs('git', full, call.cwd, { writable: opts.writable, readOnly: opts.readOnly, network, user: opts.user });
    return execGit(wrapped.command, wrapped.args, { ...call, env: { ...call.env, HOME: '/tmp' } }, {});
  };
}
