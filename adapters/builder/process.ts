import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface Ran {
  code: number | null;
  /** Every output line, stdout and stderr interleaved as they came. */
  lines: string[];
}

/**
 * Runs a command, handing each output line to `onLine` as it comes; ends it (SIGTERM, then
 * SIGKILL) when `signal` aborts. Never throws for a non-zero exit: the caller classes it.
 */
export function runLines(
  command: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; signal: AbortSignal; onLine(line: string, stream: 'stdout' | 'stderr'): void },
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    if (opts.signal.aborted) return reject(opts.signal.reason);
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    for (const [stream, readable] of [
      ['stdout', child.stdout],
      ['stderr', child.stderr],
    ] as const) {
      createInterface({ input: readable }).on('line', (line) => {
        lines.push(line);
        opts.onLine(line, stream);
      });
    }
    let killer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      child.kill('SIGTERM');
      killer = setTimeout(() => child.kill('SIGKILL'), 5000);
    };
    opts.signal.addEventListener('abort', onAbort, { once: true });
    child.once('error', reject);
    child.once('close', (code) => {
      opts.signal.removeEventListener('abort', onAbort);
      clearTimeout(killer);
      if (opts.signal.aborted) reject(opts.signal.reason);
      else resolve({ code, lines });
    });
  });
}

/** The last line that says something, for a one-line error message. */
export const lastMeaningful = (lines: string[]): string =>
  [...lines]
    .reverse()
    .find((l) => l.trim() !== '')
    ?.trim() ?? 'no output';
