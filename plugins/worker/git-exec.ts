import { spawn } from 'node:child_process';
import { sandboxArgs, type SandboxNetwork } from '../../core/sandbox.ts';
import { GIT_HARDENING, gitEnv } from '../../core/git-hardening.ts';
import { Aborted } from './failure.ts';
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

export interface GitCall {
  cwd: string;
  /** Variables for this call (credentials for the mirror's remote; never for the checkout). */
  env?: Record<string, string>;
  /** Written to git's standard input. */
  input?: string;
  signal: AbortSignal;
}

export type GitRunner = (args: string[], call: GitCall) => Promise<string>;

const GIT_TIMEOUT_MS = 10 * 60_000;
const MAX_OUTPUT = 16 * 1024 * 1024;

/** The worker's own git, for the mirror and a checkout nothing of a job has touched yet. */
export const trustedGit: GitRunner = (args, call) => execGit('git', ['-c', 'protocol.allow=user', ...GIT_HARDENING, ...args], call, {});

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

function execGit(command: string, args: string[], call: GitCall, as: Partial<RunAs>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: call.cwd,
      env: gitEnv(call.env),
      signal: call.signal,
      timeout: GIT_TIMEOUT_MS,
      stdio: [call.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      ...as,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    child.stdout!.on('data', (b: Buffer) => {
      size += b.length;
      if (size <= MAX_OUTPUT) out.push(b);
    });
    child.stderr!.on('data', (b: Buffer) => err.length < 256 && err.push(b));
    if (call.input !== undefined) {
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(call.input);
    }
    child.once('error', (e) => {
      if (call.signal.aborted) return reject(new Aborted(String(call.signal.reason ?? 'aborted')));
      reject(Object.assign(e, { stderr: Buffer.concat(err).toString() }));
    });
    child.once('close', (code, signal) => {
      if (call.signal.aborted) return reject(new Aborted(String(call.signal.reason ?? 'aborted')));
      const stderr = Buffer.concat(err).toString();
      if (code === 0) return resolve(Buffer.concat(out).toString().trim());
      reject(Object.assign(new Error(`git ${args.find((a) => !a.startsWith('-') && !a.includes('=')) ?? ''} exited ${code ?? signal}`), { stderr }));
    });
  });
}
