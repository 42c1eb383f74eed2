import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../core/db/embedded.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TEST_CONFIG = fileURLToPath(new URL('../../config/test.yaml', import.meta.url));

/** `svc serve` as a real child process (node --import tsx core/main.ts serve), for fault tests. */
export interface ServerProcess {
  child: ChildProcess;
  url: string;
  scratch: string;
  output(): string;
  /** Resolves with the exit code (or the signal) once the process has ended. */
  exited: Promise<number | string | null>;
  /** True while the process has not exited. */
  running(): boolean;
  /** SIGTERM (then SIGKILL after 20 s) and wait; the scratch folder is removed. */
  stop(): Promise<void>;
}

export async function startServerProcess(databaseUrl: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  const port = await freePort();
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-process-'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'core/main.ts', 'serve'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH!,
      HOME: process.env.HOME ?? '/root',
      SVC_CONFIG: TEST_CONFIG,
      SVC_LOG_LEVEL: 'warn',
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      SVC_DATA_DIR: path.join(scratch, 'data'),
      SVC_SECRETS_MASTER_KEY: createHash('sha256').update(databaseUrl).digest('hex'),
      SVC_WORKSPACE_ROOT: path.join(scratch, 'workspaces'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  let gone = false;
  const exited = new Promise<number | string | null>((resolve) =>
    child.on('exit', (code, signal) => {
      gone = true;
      resolve(code ?? signal);
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (gone) throw new Error(`svc serve exited while starting: ${output}`);
    const res = await fetch(`${url}/health`).catch(() => null);
    if (res?.status === 200) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`svc serve did not answer /health within 90 s: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    url,
    scratch,
    exited,
    output: () => output,
    running: () => !gone,
    stop: async () => {
      if (!gone) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(killer);
      }
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}
