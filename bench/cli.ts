import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startBenchServer } from './server.ts';
import { ascending, checkRow, fmt, goalRow, json, knob, percentile, printTable, seedProject, type Row } from './lib.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RUNS = knob('BENCH_CLI_RUNS', 30);
/** The goal: what the CLI adds to the request itself. */
const OVERHEAD_GOAL_MS = 150;

function timed(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; code: number; stdout: string }> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, env }, (error, stdout) => {
      resolve({ ms: performance.now() - started, code: error ? Number(error.code ?? 1) : 0, stdout });
    });
  });
}

async function sample(command: string, args: string[], env: NodeJS.ProcessEnv, failures: string[], what: string): Promise<Float64Array> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const run = await timed(command, args, env);
    if (run.code !== 0) failures.push(`${what}: exit ${run.code}`);
    times.push(run.ms);
  }
  return ascending(times);
}

/**
 * `npm run bench -- cli`: wall time of the compiled `svc` command (a new Node process each time, as
 * a user at a shell runs it) beside curl fetching the same route, interleaved so both see the same
 * machine. The overhead is the CLI's p50 minus curl's p50.
 */
export async function runCliBench(): Promise<string[]> {
  const failures: string[] = [];
  const server = await startBenchServer();
  try {
    const { token, projectId } = await seedProject(server.url);
    await json(`${server.url}/projects/${projectId}/jobs`, 'POST', { description: 'bench job', phase: 'backlog' }, token);
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, SVC_API_URL: server.url, SVC_TOKEN: token };
    const route = `${server.url}/projects/${projectId}/jobs?limit=1`;
    const bin = 'dist/cli/bin.js';

    const help = await sample(process.execPath, [bin, '--help'], env, failures, 'svc --help');
    const list = await sample(process.execPath, [bin, 'job', 'list', '--limit', '1', '--project', projectId], env, failures, 'svc job list');
    const curl = await sample('curl', ['-sf', '-H', `authorization: Bearer ${token}`, route], env, failures, 'curl');
    const bare = await sample(process.execPath, ['-e', '0'], env, failures, 'node -e 0');
    const rows: Row[] = [];
    for (const [name, times] of [
      ['node -e 0 (Node start-up alone)', bare],
      ['curl GET /projects/{id}/jobs?limit=1', curl],
      ['svc --help', help],
      ['svc job list --limit 1', list],
    ] as const) {
      rows.push(
        { scenario: name, figure: 'p50', value: fmt.ms(percentile(times, 50)) },
        { scenario: name, figure: 'p99', value: fmt.ms(percentile(times, 99)) },
      );
    }
    const overhead = percentile(list, 50) - percentile(curl, 50);
    rows.push(goalRow('CLI overhead', 'svc job list p50 − curl p50', overhead, fmt.ms, { atMost: OVERHEAD_GOAL_MS }));
    rows.push(goalRow('CLI overhead', 'svc --help p50', percentile(help, 50), fmt.ms, { atMost: OVERHEAD_GOAL_MS }));
    rows.push(checkRow('CLI overhead', 'runs that failed', String(failures.length), '0', failures.length === 0, []));
    printTable(`svc CLI benchmark: ${RUNS} runs each, compiled CLI (dist/cli/bin.js), a new process per run`, rows, [
      'wall time from spawn to exit, measured by this process; curl fetches the route svc job list calls, with the same token',
    ]);
  } finally {
    await server.stop();
  }
  return failures;
}
