import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../core/db/embedded.ts';
import { createTestDatabase } from '../test/support/database.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface BenchServer {
  url: string;
  /** The server's database, so a benchmark can check what its requests wrote. */
  databaseUrl: string;
  /** The server process, whose CPU time a benchmark may read (/proc/<pid>/stat). */
  pid: number;
  stop(): Promise<void>;
}

/**
 * `svc serve --roles api` in its own process (so the load generator does not share its event
 * loop), on a fresh database from the test helper: beside DATABASE_URL when set, else an embedded
 * PostgreSQL (started by this process and handed to the server as DATABASE_URL).
 */
export async function startBenchServer(extraEnv: Record<string, string> = {}): Promise<BenchServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-bench-'));
  chmodSync(dataDir, 0o755);
  const database = await createTestDatabase();
  let child: ChildProcess | null = null;
  const stop = async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
    await database.drop();
  };
  try {
    const port = await freePort();
    const env: Record<string, string> = {
      PATH: process.env.PATH!,
      HOME: process.env.HOME ?? '/root',
      PORT: String(port),
      SVC_DATA_DIR: dataDir,
      SVC_LOG_LEVEL: 'warn',
      SVC_ROLES: 'api',
      DATABASE_URL: database.url,
      // Benchmarks measure throughput: one token sends thousands of requests a second and leaves
      // many thousands of jobs queued. The limits are off unless a bench turns them on (bench/hot.ts).
      SVC_LIMITS__REQUESTS__ENABLED: 'false',
      SVC_LIMITS__ORG__QUEUED_JOBS: '1000000000',
      ...extraEnv,
    };
    // BENCH_SERVER_NODE_ARGS: e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile the server (written when it stops).
    const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
    child = spawn(process.execPath, [...nodeArgs, 'dist/core/main.js', 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'inherit', 'inherit'] });
    const url = `http://127.0.0.1:${port}`;
    const until = Date.now() + 120_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error('the bench server exited');
      if (Date.now() > until) throw new Error('the bench server did not start');
      if (
        await fetch(`${url}/health`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      await new Promise((r) => setTimeout(r, 200));
    }
    return { url, databaseUrl: database.url, pid: child.pid!, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
