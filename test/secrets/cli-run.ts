import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../dist/cli/bin.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `node dist/cli/bin.js ...args` with HOME set, only the given variables, and `stdin` piped in (or closed). */
export function svc(home: string, args: string[], env: Record<string, string>, stdin = ''): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...env }, cwd: home });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  child.stdin.end(stdin);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr })));
}

export const show = (args: string[], r: CliResult) => `svc ${args.join(' ')} → exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
