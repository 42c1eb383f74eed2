import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServeProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * `svc serve` as `npm start` runs it (the compiled server in dist/, which `npm test` builds first),
 * with only the variables given (no DATABASE_URL unless set).
 * `detached` puts it in a process group of its own, as a shell puts a foreground command: a signal
 * to `-pid` then reaches the whole group, as the terminal's Ctrl-C does.
 */
export function serveProcess(env: Record<string, string>, opts: { command?: string[]; cwd?: string; detached?: boolean } = {}): ServeProcess {
  const child = spawn(process.execPath, opts.command ?? ['dist/core/main.js', 'serve'], {
    cwd: opts.cwd ?? ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/root', SVC_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: opts.detached ?? false,
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

export async function waitForHealth(url: string, proc: ServeProcess, deadlineMs = 90_000): Promise<any> {
  const until = Date.now() + deadlineMs;
  let exited = false;
  void proc.exited.then(() => (exited = true));
  while (Date.now() < until) {
    if (exited) throw new Error(`svc serve exited before answering: ${proc.output()}`);
    try {
      const res = await fetch(`${url}/health`);
      if (res.status === 200) return res.json();
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no healthy answer from ${url}`);
}

export const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
