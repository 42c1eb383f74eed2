import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RuntimeToken, type Runtime } from '../core/ports/runtime.ts';
import { createAdapter } from '../core/adapters.ts';
import { ascending, checkRow, fmt, goalRow, kernelWithProject, knob, percentile, printTable, type Row } from './lib.ts';

/**
 * Attempt overhead of the in-process worker on the local runtime: from the claim (the attempt's
 * started_at, the claiming transaction's database time) to the moment the runtime has spawned the
 * attempt's process, for script jobs without a repository, with a file:// checkout, and with a
 * reused workspace (workspace.mode job: a retry continues the checkout its first attempt left,
 * beside that first attempt's fresh clone).
 */
const JOBS = knob('BENCH_WORKER_JOBS', 200);
const CONCURRENCY = knob('BENCH_WORKER_CONCURRENCY', 4);
const GOALS = { bare: { p50: 50, p99: 200 }, checkout: { p50: 150, p99: 500 }, reused: { p50: 150, p99: 500 } };
type Label = 'bare' | 'checkout' | 'reused';
const TITLES: Record<Label, string> = { bare: 'no repository', checkout: 'file:// checkout', reused: 'workspace.mode job' };
/** Fails the first attempt (leaving a marker in the workspace) and succeeds on the retry. */
const RETRY_ONCE = '[ -f .bench-retried ] || { touch .bench-retried; exit 1; }';

/** The local runtime, wrapped to note when each attempt's process was spawned (keyed by SVC_ATTEMPT_ID). */
function timingRuntime(spawned: Map<string, number>): { runtime: Runtime; use(inner: Runtime): void } {
  let inner: Runtime;
  return {
    use: (r) => (inner = r),
    runtime: {
      name: 'local (timed)',
      start: async (spec) => {
        const proc = await inner.start(spec);
        spawned.set(spec.env.SVC_ATTEMPT_ID, Date.now());
        return proc;
      },
    },
  };
}

async function scenario(label: Label, rows: Row[], failures: string[]): Promise<void> {
  const spawned = new Map<string, number>();
  const timed = timingRuntime(spawned);
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-bench-worker-'));
  const { srv, api, projectId } = await kernelWithProject(['api', 'orchestrator', 'worker'], (c) => c.registerInstance(RuntimeToken, timed.runtime), {
    worker: { concurrency: CONCURRENCY, workspace_root: path.join(scratch, 'workspaces') },
  });
  try {
    const { config, db, databaseUrl, logger } = srv.kernel;
    timed.use(await createAdapter('runtime', config.adapters.runtime, { config, db, databaseUrl, logger }));
    if (label !== 'bare') {
      const repo = path.join(scratch, 'repo');
      execFileSync('git', ['init', '--quiet', '-b', 'main', repo]);
      execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '--quiet', '--allow-empty', '-m', 'init'], { cwd: repo });
      await api.patch(`/projects/${projectId}`, { repo_url: `file://${repo}` });
    }
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i++) {
      const res = await api.post(
        `/projects/${projectId}/jobs`,
        label === 'reused'
          ? { description: 'bench', workspace: { mode: 'job' }, hints: { max_attempts: 2, step: { kind: 'script', script: { run: RETRY_ONCE } } } }
          : { description: 'bench', hints: { step: { kind: 'script', script: { run: 'true' } } } },
      );
      ids.push(res.body.id);
    }
    const deadline = Date.now() + 120_000;
    let done = 0;
    while (Date.now() < deadline) {
      done = Number((await db('jobs').whereIn('id', ids).whereIn('phase', ['done', 'cancelled']).count({ n: '*' }).first())!.n);
      if (done === ids.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const attempts = await db('job_attempts').whereIn('job_id', ids).select('id', 'status', 'started_at', 'attempt_number', 'git');
    const overheadOf = (of: typeof attempts) =>
      ascending(of.filter((a) => spawned.has(a.id)).map((a) => spawned.get(a.id)! - new Date(a.started_at).getTime()));
    const figures = (name: string, overhead: ReturnType<typeof ascending>) => {
      rows.push(goalRow(name, 'p50', percentile(overhead, 50), fmt.ms, { atMost: GOALS[label].p50 }));
      rows.push(goalRow(name, 'p99', percentile(overhead, 99), fmt.ms, { atMost: GOALS[label].p99 }));
      rows.push({ scenario: name, figure: 'max', value: fmt.ms(overhead[overhead.length - 1]) });
    };
    const name = `Attempt overhead, ${TITLES[label]}: claim → process spawned, ${JOBS} script jobs, worker.concurrency ${CONCURRENCY}`;
    if (label === 'reused') {
      figures(`${name}, first attempt (fresh clone)`, overheadOf(attempts.filter((a) => a.attempt_number === 1)));
      figures(`${name}, retry (reused workspace, fetch only)`, overheadOf(attempts.filter((a) => a.attempt_number === 2)));
      const reused = attempts.filter((a) => a.attempt_number === 2 && a.status === 'succeeded' && a.git?.workspace?.reused === true).length;
      rows.push(checkRow(name, 'retries that succeeded in the reused workspace', `${reused} of ${JOBS}`, `${JOBS} of ${JOBS}`, reused === JOBS, failures));
      return;
    }
    figures(name, overheadOf(attempts));
    const succeeded = attempts.filter((a) => a.status === 'succeeded').length;
    rows.push(
      checkRow(
        name,
        'attempts succeeded, one per job',
        `${succeeded} of ${attempts.length}`,
        `${JOBS} of ${JOBS}`,
        succeeded === JOBS && attempts.length === JOBS,
        failures,
      ),
    );
  } finally {
    await srv.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Returns the failed checks. */
export async function runWorkerBench(): Promise<string[]> {
  const failures: string[] = [];
  const rows: Row[] = [];
  await scenario('bare', rows, failures);
  await scenario('checkout', rows, failures);
  await scenario('reused', rows, failures);
  printTable('svc worker benchmark', rows, [
    'a kernel with roles [api, orchestrator, worker] in this process: the JobDispatcher claims, the in-process worker runs each attempt on the local runtime (wrapped only to note the spawn time)',
    "overhead = the moment the runtime resolved start() (the child process spawned) − the attempt's started_at (database time of the claiming transaction); it covers loading the job, the workspace, the checkout (second scenario), secrets, the job token and the spawn",
    'jobs are created back to back (POST /projects/{id}/jobs, server.inject), so attempts queue for the worker; the queue wait is before the claim and not counted',
    'workspace.mode job: each job fails its first attempt and succeeds on its retry (hints.max_attempts 2); the retry reuses the workspace (git fetch, checkout kept) where the first attempt cloned',
    'BENCH_WORKER_JOBS and BENCH_WORKER_CONCURRENCY set the size',
  ]);
  return failures;
}
