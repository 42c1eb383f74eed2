import { spawn } from 'node:child_process';
import { Aborted } from './aborted.ts';
import { GIT_HARDENING, gitEnv } from './git-hardening.ts';

/**
 * The one way svc runs git itself (the worker, the repository cache, a race's branch cleanup):
 * hardened configuration on the command line, none of the server's environment, bounded output
 * and time (docs/security.md, "The worker's git").
 */

export interface GitCall {
  cwd: string;
  /** Variables for this call (credentials for a remote; never for a job's checkout). */
  env?: Record<string, string>;
  /** Written to git's standard input. */
  input?: string;
  signal?: AbortSignal;
  /** Default 10 minutes. */
  timeoutMs?: number;
  /** The output exactly as git printed it (a file's content); by default it is trimmed. */
  untrimmed?: boolean;
}

export type GitRunner = (args: string[], call: GitCall) => Promise<string>;

const GIT_TIMEOUT_MS = 10 * 60_000;
const MAX_OUTPUT = 16 * 1024 * 1024;

/** svc's own git, on repositories svc owns (a mirror, the cache, a scratch repository) or nothing of a job has touched yet. */
export const trustedGit: GitRunner = (args, call) => execGit('git', ['-c', 'protocol.allow=user', ...GIT_HARDENING, ...args], call);

/**
 * Runs `command` (git, or the sandbox wrapping it) with `args`: its trimmed standard output, else
 * an error carrying `stderr`; `Aborted` once `call.signal` fires. `as` sets the user it runs as.
 */
export function execGit(command: string, args: string[], call: GitCall, as: { uid?: number; gid?: number } = {}): Promise<string> {
  if (call.signal?.aborted) return Promise.reject(new Aborted(String(call.signal.reason ?? 'aborted')));
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: call.cwd,
      env: gitEnv(call.env),
      ...(call.signal ? { signal: call.signal } : {}),
      stdio: [call.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      ...as,
    });
    // Our own bound, not spawn's `timeout`: it ends with the process however that ends, and never holds the process open.
    const bound = setTimeout(() => child.kill('SIGKILL'), call.timeoutMs ?? GIT_TIMEOUT_MS);
    bound.unref();
    child.once('close', () => clearTimeout(bound));
    child.once('error', () => clearTimeout(bound));
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
    const aborted = () => call.signal?.aborted && new Aborted(String(call.signal.reason ?? 'aborted'));
    child.once('error', (e) => reject(aborted() || Object.assign(e, { stderr: Buffer.concat(err).toString() })));
    child.once('close', (code, signal) => {
      const stopped = aborted();
      if (stopped) return reject(stopped);
      const stderr = Buffer.concat(err).toString();
      if (code === 0) {
        const output = Buffer.concat(out).toString();
        return resolve(call.untrimmed ? output : output.trim());
      }
      reject(Object.assign(new Error(`git ${args.find((a) => !a.startsWith('-') && !a.includes('=')) ?? ''} exited ${code ?? signal}`), { stderr }));
    });
  });
}
