import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { RuntimeToken } from '../core/ports/runtime.ts';
import { createAdapter } from '../core/adapters.ts';
import { LARGE_NOTES, largeRepoRows } from './worker-large.ts';
import { ascending, checkRow, fmt, goalRow, kernelWithProject, knob, percentile, printTable, timingRuntime, type Row } from './lib.ts';

/**
 * Attempt overhead of the in-process worker on the local runtime: from the claim (the attempt's
 * started_at, the claiming transaction's database time) to the attempt's process's first line of
 * output (so a sandbox's own start is counted), for script jobs without a repository, with a
 * file:// checkout, and with a reused workspace (workspace.mode job: a retry continues the checkout
 * its first attempt left, beside that first attempt's fresh clone); the first two also with the
 * attempt sandbox off, so what the sandbox adds is measured in the same run.
 */
const JOBS = knob('BENCH_WORKER_JOBS', 200);
const CONCURRENCY = knob('BENCH_WORKER_CONCURRENCY', 4);
const GOALS = { bare: { p50: 50, p99: 200 }, checkout: { p50: 150, p99: 500 }, reused: { p50: 150, p99: 500 } };
/** What the sandbox may add to the p50 (issue 28). */
const SANDBOX_GOAL_MS = 20;
type Label = 'bare' | 'checkout' | 'reused';
const TITLES: Record<Label, string> = { bare: 'no repository', checkout: 'file:// checkout', reused: 'workspace.mode job' };
/** Fails the first attempt (leaving a marker in the workspace) and succeeds on the retry. */
const RETRY_ONCE = 'echo started; [ -f .bench-retried ] || { touch .bench-retried; exit 1; }';

type Sandbox = 'on' | 'off';

/** How many jobs, and how many attempts run at once. */
interface Size {
  jobs: number;
  concurrency: number;
}
const LOADED: Size = { jobs: JOBS, concurrency: CONCURRENCY };

/** Overheads of one kernel's attempts, ascending, and how many succeeded of how many. */
interface Samples {
  overhead: Float64Array;
  succeeded: number;
  attempts: number;
}

const overheadName = (label: Label, sandbox: Sandbox, size: Size) =>
  `Attempt overhead, ${TITLES[label]}, sandbox ${sandbox}: claim → first output line, ${size.jobs} script jobs, worker.concurrency ${size.concurrency}`;

function figures(rows: Row[], label: Label, name: string, overhead: Float64Array): void {
  rows.push(goalRow(name, 'p50', percentile(overhead, 50), fmt.ms, { atMost: GOALS[label].p50 }));
  rows.push(goalRow(name, 'p99', percentile(overhead, 99), fmt.ms, { atMost: GOALS[label].p99 }));
  rows.push({ scenario: name, figure: 'max', value: fmt.ms(overhead[overhead.length - 1]) });
}

const succeededRow = (name: string, runs: Samples[], jobs: number, failures: string[]): Row => {
  const succeeded = runs.reduce((n, r) => n + r.succeeded, 0);
  const attempts = runs.reduce((n, r) => n + r.attempts, 0);
  return checkRow(
    name,
    'attempts succeeded, one per job',
    `${succeeded} of ${attempts}`,
    `${jobs} of ${jobs}`,
    succeeded === jobs && attempts === jobs,
    failures,
  );
};

/** Whether the worker's repository cache is on (BENCH_WORKER_REPO_CACHE=off: off throughout). */
const CACHE_ON = process.env.BENCH_WORKER_REPO_CACHE !== 'off';

async function scenario(label: Label, sandbox: Sandbox, rows: Row[], failures: string[], size: Size = LOADED, repoCache = CACHE_ON): Promise<Samples> {
  const spawned = new Map<string, number>();
  const timed = timingRuntime(spawned);
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-bench-worker-'));
  const { srv, api, projectId } = await kernelWithProject(['api', 'orchestrator', 'worker'], (c) => c.registerInstance(RuntimeToken, timed.runtime), {
    worker: {
      concurrency: size.concurrency,
      workspace_root: path.join(scratch, 'workspaces'),
      sandbox: { mode: sandbox === 'on' ? 'on' : 'off' },
      repo_cache: { enabled: repoCache },
    },
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
    for (let i = 0; i < size.jobs; i++) {
      const res = await api.post(
        `/projects/${projectId}/jobs`,
        label === 'reused'
          ? { description: 'bench', workspace: { mode: 'job' }, hints: { max_attempts: 2, step: { kind: 'script', script: { run: RETRY_ONCE } } } }
          : { description: 'bench', hints: { step: { kind: 'script', script: { run: 'echo started' } } } },
      );
      ids.push(res.body.id);
    }
    // Generous: on two loaded cores an attempt can take seconds, and a job not done in time counts as failed.
    const deadline = Date.now() + 60_000 + size.jobs * 1_500;
    let done = 0;
    while (Date.now() < deadline) {
      done = Number((await db('jobs').whereIn('id', ids).whereIn('phase', ['done', 'cancelled']).count({ n: '*' }).first())!.n);
      if (done === ids.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const attempts = await db('job_attempts').whereIn('job_id', ids).select('id', 'status', 'started_at', 'attempt_number', 'git');
    const overheadOf = (of: typeof attempts) =>
      ascending(of.filter((a) => spawned.has(a.id)).map((a) => spawned.get(a.id)! - new Date(a.started_at).getTime()));
    const name = overheadName(label, sandbox, size);
    if (label === 'reused') {
      figures(rows, label, `${name}, first attempt (fresh clone)`, overheadOf(attempts.filter((a) => a.attempt_number === 1)));
      const retries = overheadOf(attempts.filter((a) => a.attempt_number === 2));
      figures(rows, label, `${name}, retry (reused workspace, fetch only)`, retries);
      const reused = attempts.filter((a) => a.attempt_number === 2 && a.status === 'succeeded' && a.git?.workspace?.reused === true).length;
      rows.push(checkRow(name, 'retries that succeeded in the reused workspace', `${reused} of ${JOBS}`, `${JOBS} of ${JOBS}`, reused === JOBS, failures));
      return { overhead: retries, succeeded: reused, attempts: JOBS };
    }
    return { overhead: overheadOf(attempts), succeeded: attempts.filter((a) => a.status === 'succeeded').length, attempts: attempts.length };
  } finally {
    await srv.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * The repository cache against no cache on a small repository (issue 35: "not slower than today"):
 * one attempt at a time, sandbox on (the default), the modes alternating (off, on, on, off).
 */
async function cacheComparison(rows: Row[], failures: string[]): Promise<void> {
  const single: Size = { jobs: Math.ceil(JOBS / 4), concurrency: 1 };
  const runs: Record<'off' | 'on', Samples[]> = { off: [], on: [] };
  for (const cache of ['off', 'on', 'on', 'off'] as const) runs[cache].push(await scenario('checkout', 'on', rows, failures, single, cache === 'on'));
  const name = `The repository cache on a small repository, ${TITLES.checkout}, sandbox on: worker.concurrency 1, ${single.jobs} jobs in each of off, on, on, off`;
  const p50 = (mode: 'off' | 'on') => percentile(ascending(runs[mode].flatMap((r) => [...r.overhead])), 50);
  rows.push({ scenario: name, figure: 'p50, without the cache (a clone of the remote)', value: fmt.ms(p50('off')) });
  rows.push({ scenario: name, figure: 'p50, with the cache', value: fmt.ms(p50('on')) });
  rows.push(goalRow(name, 'p50 with ÷ p50 without', p50('on') / p50('off'), (v) => `${v.toFixed(2)}×`, { atMost: 1.1 }));
  rows.push(succeededRow(name, [...runs.off, ...runs.on], single.jobs * 4, failures));
}

/** Returns the failed checks. */
export async function runWorkerBench(): Promise<string[]> {
  const failures: string[] = [];
  const parts = (process.env.BENCH_WORKER_PARTS ?? 'small,large').split(',');
  if (parts.includes('small')) await smallRepoBench(failures);
  if (parts.includes('large')) {
    const rows: Row[] = [];
    await largeRepoRows(rows);
    printTable('svc worker benchmark: a large repository, with and without the repository cache (issue 35)', rows, LARGE_NOTES);
  }
  return failures;
}

async function smallRepoBench(failures: string[]): Promise<void> {
  const rows: Row[] = [];
  for (const label of ['bare', 'checkout'] as const) {
    const loaded: Partial<Record<Sandbox, number>> = {};
    for (const sandbox of ['off', 'on'] as const) {
      const run = await scenario(label, sandbox, rows, failures);
      const name = overheadName(label, sandbox, LOADED);
      figures(rows, label, name, run.overhead);
      rows.push(succeededRow(name, [run], LOADED.jobs, failures));
      loaded[sandbox] = percentile(run.overhead, 50);
    }
    rows.push({
      scenario: `What the attempt sandbox adds under load, ${TITLES[label]}: worker.concurrency ${CONCURRENCY} on ${availableParallelism()} cores`,
      figure: 'p50 on − p50 off',
      value: fmt.ms(loaded.on! - loaded.off!),
    });
    if (label === 'checkout') {
      if (CACHE_ON) await cacheComparison(rows, failures);
      continue;
    }
    // One attempt at a time, the modes alternating (off, on, on, off) so that a drift of the machine cancels out. Without a
    // repository: a clone's own spread (tens of ms from one to the next) would hide the few the sandbox adds.
    const single: Size = { jobs: Math.ceil(JOBS / 2), concurrency: 1 };
    const runs: Record<Sandbox, Samples[]> = { off: [], on: [] };
    for (const sandbox of ['off', 'on', 'on', 'off'] as const) runs[sandbox].push(await scenario(label, sandbox, rows, failures, single));
    const name = `What the attempt sandbox adds to one attempt's start, ${TITLES[label]}: worker.concurrency 1, ${single.jobs} jobs in each of off, on, on, off`;
    const p50 = (mode: Sandbox) => percentile(ascending(runs[mode].flatMap((r) => [...r.overhead])), 50);
    rows.push({ scenario: name, figure: 'p50, sandbox off', value: fmt.ms(p50('off')) });
    rows.push({ scenario: name, figure: 'p50, sandbox on', value: fmt.ms(p50('on')) });
    rows.push(goalRow(name, 'p50 on − p50 off', p50('on') - p50('off'), fmt.ms, { atMost: SANDBOX_GOAL_MS }));
    rows.push(succeededRow(name, [...runs.off, ...runs.on], single.jobs * 4, failures));
  }
  await scenario('reused', 'on', rows, failures);
  printTable('svc worker benchmark', rows, [
    'a kernel with roles [api, orchestrator, worker] in this process: the JobDispatcher claims, the in-process worker runs each attempt on the local runtime (wrapped only to note the spawn time)',
    "overhead = the moment the attempt's process wrote its first line (`echo started`) − the attempt's started_at (database time of the claiming transaction); it covers loading the job, the workspace, the checkout (second scenario), secrets, the job token, the spawn and, sandboxed, bubblewrap's own start",
    'sandbox off and on run in this run (worker.sandbox.mode off | on), each mode in a kernel of its own; the sandbox needs bubblewrap (apt-get install bubblewrap)',
    "what the sandbox adds to one attempt's start: one attempt at a time, without a repository, so the figure is the sandbox's own latency (its processes, the workspace handed to the attempt's user, its home); under load the same work also waits for the cores, shown beside it without a goal",
    'on a root server the sandboxed attempt runs as nobody and the unsandboxed one as root (the defaults), so the sandbox side includes handing the workspace over; the unsandboxed side writes its warning into each attempt log',
    'jobs are created back to back (POST /projects/{id}/jobs, server.inject), so attempts queue for the worker; the queue wait is before the claim and not counted',
    "the repository cache on a small repository: one attempt at a time with worker.repo_cache on (the default: objects from the worker's mirror, the tree copy-on-write) and off (a clone of the remote per attempt), alternating off, on, on, off; goal: not slower than without it, within 10 %",
    'workspace.mode job: each job fails its first attempt and succeeds on its retry (hints.max_attempts 2); the retry reuses the workspace (git fetch, checkout kept) where the first attempt cloned',
    'BENCH_WORKER_JOBS and BENCH_WORKER_CONCURRENCY set the size; BENCH_WORKER_PARTS=small,large picks the parts (large: bench/worker-large.ts); BENCH_WORKER_REPO_CACHE=off runs the small part without the repository cache (and skips the comparison of one attempt at a time with and without it)',
  ]);
}
