import { Claims } from '../plugins/jobs/claims/claims.ts';
import { WorkerDispatcherToken, type ClaimedAttempt, type WorkerDispatcher } from '../core/ports/worker.ts';
import { ascending, checkRow, cpuMeter, fmt, goalRow, kernelWithProject, knob, percentile, pgWaits, printTable, type Row } from './lib.ts';

const RUNS = knob('BENCH_PIPELINE_RUNS', 100);
const STEPS = knob('BENCH_PIPELINE_STEPS', 10);
/**
 * One measured pass per entry: at most this many runs unfinished at once (a new run is started
 * when one ends). 1: one run at a time, the transition alone; RUNS: every run started back to back.
 */
const CONCURRENCY = (process.env.BENCH_PIPELINE_CONCURRENCY ?? `1,${RUNS}`).split(',').map((c) => {
  const n = Number(c);
  if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_PIPELINE_CONCURRENCY: "${c}" is not a positive integer`);
  return Math.min(n, RUNS);
});
/** Runs started (one at a time) before the first measured pass: JIT, pool and plan caches warm. */
const WARMUP_RUNS = 5;
/** A run not finished this long after its POST counts as stuck: the pass starts no further runs. */
const RUN_TIMEOUT_MS = 30_000;
const PIPELINE = 'chain';
const GOAL_P50_MS = 10;
const GOAL_P99_MS = 50;

if (!(Number.isInteger(RUNS) && RUNS >= 1) || !(Number.isInteger(STEPS) && STEPS >= 2)) {
  throw new Error(`BENCH_PIPELINE_RUNS must be ≥ 1 and BENCH_PIPELINE_STEPS ≥ 2 (got ${RUNS}, ${STEPS})`);
}

/** A linear pipeline: s1 ← s2 ← … ← sN, each a no-op script step. */
function manifest(steps: number): string {
  const lines = [`pipelines:`, `  ${PIPELINE}:`, `    steps:`];
  for (let i = 1; i <= steps; i++) {
    lines.push(`      - { name: s${i}, script: { run: "true" }${i > 1 ? `, depends_on: [s${i - 1}]` : ''} }`);
  }
  return `${lines.join('\n')}\n`;
}

/** What the worker saw of one job (performance.now() times). */
interface Seen {
  /** When the dispatcher handed the claimed attempt over (the claim transaction had committed). */
  claimedAt: number;
  dispatches: number;
  /** When Claims.complete resolved: the attempt's end, the job done and the run's update committed. */
  completedAt: number | null;
  completeMs: number | null;
  error: string | null;
}

interface Run {
  id: string;
  /** The steps' jobs in step order (s1 … sN). */
  jobIds: string[];
  postedAt: number;
  postMs: number;
}

/**
 * A worker stand-in registered as the orchestrator's WorkerDispatcher: on every claimed attempt it
 * notes the time, then completes it at once (success) through Claims.complete with the lease
 * token, as the worker's completion route does, and notes when that committed.
 */
function completingWorker() {
  const seen = new Map<string, Seen>();
  /** Per job: the claimNext call that claimed it (start, end), from the timing wrapper in `use`. */
  const claimCalls = new Map<string, { start: number; end: number; batch: number }>();
  const listeners = new Set<() => void>();
  let claims: Claims | null = null;
  const settled = (id: string) => {
    const s = seen.get(id);
    return !!s && (s.completedAt !== null || s.error !== null);
  };
  const worker: WorkerDispatcher = {
    capacity: () => 1_000_000,
    dispatch: async (a: ClaimedAttempt) => {
      const now = performance.now();
      const s = seen.get(a.jobId);
      if (s) {
        s.dispatches++;
        return; // a second claim of one job: counted by the checks, not completed again
      }
      const entry: Seen = { claimedAt: now, dispatches: 1, completedAt: null, completeMs: null, error: null };
      seen.set(a.jobId, entry);
      // Not awaited: the dispatcher goes on handing out its batch while this attempt "runs".
      void (async () => {
        const t0 = performance.now();
        try {
          if (!claims) throw new Error('the worker got an attempt before the kernel was up');
          await claims.complete(a.jobId, a.attemptId, { lease_token: a.leaseToken, result: { status: 'success' } });
          entry.completedAt = performance.now();
          entry.completeMs = entry.completedAt - t0;
        } catch (e) {
          entry.error = (e as Error).message;
        }
        for (const l of [...listeners]) l();
      })();
    },
  };
  return {
    worker,
    seen,
    claimCalls,
    /**
     * The kernel's Claims singleton (the one its JobDispatcher calls): completions go through it,
     * and its claimNext gets a timing wrapper (two clock reads, same call) so a transition splits
     * into the wait for a claim pass and the claim transaction.
     */
    use(c: Claims) {
      claims = c;
      const claimNext = c.claimNext.bind(c);
      c.claimNext = async (...args: Parameters<Claims['claimNext']>) => {
        const start = performance.now();
        const got = await claimNext(...args);
        const end = performance.now();
        for (const { job } of got) claimCalls.set(job.id, { start, end, batch: got.length });
        return got;
      };
    },
    /** Resolves true once every job of `jobIds` is completed (or its completion failed), false after `ms`. */
    settled(jobIds: string[], ms: number): Promise<boolean> {
      return new Promise((resolve) => {
        if (jobIds.every(settled)) return resolve(true);
        const listener = () => {
          if (!jobIds.every(settled)) return;
          clearTimeout(timer);
          listeners.delete(listener);
          resolve(true);
        };
        const timer = setTimeout(() => {
          listeners.delete(listener);
          resolve(false);
        }, ms);
        listeners.add(listener);
      });
    },
  };
}

type Api = Awaited<ReturnType<typeof kernelWithProject>>['api'];

async function startRun(api: Api, projectId: string): Promise<Run> {
  const postedAt = performance.now();
  const res = await api.post(`/projects/${projectId}/pipelines/${PIPELINE}/run`, {});
  const postMs = performance.now() - postedAt;
  if (res.statusCode !== 201) throw new Error(`POST pipelines/${PIPELINE}/run: ${res.statusCode} ${JSON.stringify(res.body)}`);
  const byName = new Map<string, string>((res.body.steps ?? []).map((s: { name: string; job_id: string }) => [s.name, s.job_id]));
  const jobIds = Array.from({ length: STEPS }, (_, i) => byName.get(`s${i + 1}`));
  if (jobIds.some((id) => !id)) throw new Error(`run ${res.body.id}: steps without a job: ${JSON.stringify(res.body.steps)}`);
  return { id: res.body.id, jobIds: jobIds as string[], postedAt, postMs };
}

/** `total` runs, at most `concurrency` unfinished at once; stops starting runs once one is stuck. */
async function runPass(api: Api, projectId: string, w: ReturnType<typeof completingWorker>, total: number, concurrency: number) {
  const runs: Run[] = [];
  const stuck: Run[] = [];
  const start = performance.now();
  const inFlight = new Set<Promise<void>>();
  for (let i = 0; i < total && stuck.length === 0; i++) {
    while (inFlight.size >= concurrency) await Promise.race(inFlight);
    if (stuck.length) break;
    const run = await startRun(api, projectId);
    runs.push(run);
    const done: Promise<void> = w.settled(run.jobIds, RUN_TIMEOUT_MS).then((ok) => {
      if (!ok) stuck.push(run);
      inFlight.delete(done);
    });
    inFlight.add(done);
  }
  await Promise.all(inFlight);
  return { runs, stuck, seconds: (performance.now() - start) / 1000 };
}

/** Samples the kernel's knex pool every 5 ms: how many transactions waited for a connection. */
function poolSampler(db: Ctx['db']): { stop(): string } {
  const pool = (db as unknown as { client: { pool: { numPendingAcquires(): number; numUsed(): number; max: number } } }).client.pool;
  let samples = 0;
  let pending = 0;
  let maxPending = 0;
  let full = 0;
  const timer = setInterval(() => {
    const p = pool.numPendingAcquires();
    samples++;
    pending += p;
    maxPending = Math.max(maxPending, p);
    if (pool.numUsed() >= pool.max) full++;
  }, 5);
  return {
    stop() {
      clearInterval(timer);
      if (!samples) return 'n/a';
      return `${(pending / samples).toFixed(1)} / ${maxPending} (all ${pool.max} in use ${Math.round((full / samples) * 100)}% of samples)`;
    },
  };
}

function p50p99(values: number[]): string {
  const sorted = ascending(values);
  return `${fmt.ms(percentile(sorted, 50))} / ${fmt.ms(percentile(sorted, 99))}`;
}

/** What became of a pass: figures from the worker's notes, checks against the API and the database. */
async function report(
  name: string,
  pass: Awaited<ReturnType<typeof runPass>>,
  planned: number,
  load: { cpu: string; pool: string; waits: string },
  ctx: Ctx,
  failures: string[],
): Promise<Row[]> {
  const { runs, stuck } = pass;
  const { seen, claimCalls } = ctx.w;
  const transitions: number[] = [];
  const untilCall: number[] = []; // blocker committed → the claimNext call that claimed the step began
  const callMs: number[] = []; // that claimNext call
  const handOver: number[] = []; // that call returned → the step's dispatch callback
  const batch: number[] = []; // jobs that call claimed
  let early = 0; // a step claimed before its blocker's completion committed
  let missing = 0; // a transition with either end not seen
  const firstClaim: number[] = [];
  for (const run of runs) {
    const s1 = seen.get(run.jobIds[0]);
    if (s1) firstClaim.push(s1.claimedAt - run.postedAt);
    for (let k = 1; k < run.jobIds.length; k++) {
      const before = seen.get(run.jobIds[k - 1]);
      const after = seen.get(run.jobIds[k]);
      if (!before?.completedAt || !after) {
        missing++;
        continue;
      }
      const lat = after.claimedAt - before.completedAt;
      if (lat < 0) early++;
      transitions.push(lat);
      const call = claimCalls.get(run.jobIds[k]);
      if (call) {
        untilCall.push(call.start - before.completedAt);
        callMs.push(call.end - call.start);
        handOver.push(after.claimedAt - call.end);
        batch.push(call.batch);
      }
    }
  }
  const lat = ascending(transitions);
  const jobIds = runs.flatMap((r) => r.jobIds);
  const steps = jobIds.map((id) => seen.get(id));
  const dispatched = steps.filter(Boolean).length;
  const dispatches = steps.reduce((n, s) => n + (s?.dispatches ?? 0), 0);
  const completed = steps.filter((s) => s?.completedAt).length;
  const errors = steps.filter((s) => s?.error).map((s) => s!.error!);
  const completeMs = steps.flatMap((s) => (s?.completeMs != null ? [s.completeMs] : []));
  const postMs = runs.map((r) => r.postMs);

  // The runs as the API tells them.
  const statuses = new Map<string, number>();
  const stepTrouble: string[] = [];
  for (const run of runs) {
    const res = await ctx.api.get(`/projects/${ctx.projectId}/runs/${run.id}`);
    const status = res.statusCode === 200 ? String(res.body.status) : `HTTP ${res.statusCode}`;
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    if (res.statusCode === 200) {
      for (const step of res.body.steps ?? []) if (step.status !== 'succeeded') stepTrouble.push(`${run.id}/${step.name}: ${step.status}`);
    }
  }
  const succeeded = statuses.get('succeeded') ?? 0;
  const statusText = [...statuses.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([s, n]) => `${n} ${s}`)
    .join(', ');

  const {
    rows: [db],
  } = await ctx.db.raw(
    `SELECT (SELECT count(*)::int FROM job_attempts WHERE job_id = ANY(?::text[])) AS attempts,
            (SELECT count(DISTINCT job_id)::int FROM job_attempts WHERE job_id = ANY(?::text[])) AS jobs_attempted,
            (SELECT count(*)::int FROM jobs WHERE id = ANY(?::text[]) AND phase = 'done') AS done`,
    [jobIds, jobIds, jobIds],
  );

  const n = jobIds.length;
  const expectedTransitions = runs.length * (STEPS - 1);
  return [
    goalRow(name, 'p50', percentile(lat, 50), fmt.ms, { atMost: GOAL_P50_MS }),
    { scenario: name, figure: 'p95', value: fmt.ms(percentile(lat, 95)), goal: 'none set' },
    goalRow(name, 'p99', percentile(lat, 99), fmt.ms, { atMost: GOAL_P99_MS }),
    { scenario: name, figure: 'max', value: fmt.ms(lat[lat.length - 1]) },
    { scenario: name, figure: 'transitions measured', value: `${fmt.int(lat.length)} (${runs.length} runs × ${STEPS - 1})` },
    { scenario: name, figure: 'of which: committed → claimNext call began, p50 / p99', value: p50p99(untilCall) },
    { scenario: name, figure: 'of which: the claimNext call that claimed it, p50 / p99', value: p50p99(callMs) },
    { scenario: name, figure: 'of which: claimNext returned → dispatched, p50 / p99', value: p50p99(handOver) },
    {
      scenario: name,
      figure: 'jobs claimed by that claimNext call, p50 / max',
      value: batch.length ? `${percentile(ascending(batch), 50)} / ${Math.max(...batch)}` : 'n/a',
    },
    { scenario: name, figure: 'steps completed / s (pass wall time)', value: `${fmt.rate(completed / pass.seconds, 'steps/s')} (${fmt.s(pass.seconds)})` },
    { scenario: name, figure: 'POST run sent → s1 dispatched p50 (for scale)', value: fmt.ms(percentile(ascending(firstClaim), 50)) },
    { scenario: name, figure: 'POST …/run p50 / p99 (for scale)', value: p50p99(postMs) },
    { scenario: name, figure: 'Claims.complete p50 / p99 (for scale)', value: p50p99(completeMs) },
    { scenario: name, figure: 'kernel pool: transactions waiting for a connection, mean / max', value: load.pool },
    { scenario: name, figure: 'CPU cores: machine = Node + PG + others', value: load.cpu },
    { scenario: name, figure: 'PostgreSQL backends on CPU / waiting', value: load.waits },
    checkRow(
      name,
      'runs started / finished in time',
      `${runs.length} / ${runs.length - stuck.length}`,
      `${planned} / ${planned}`,
      runs.length === planned && stuck.length === 0,
      failures,
    ),
    checkRow(
      name,
      'run status (GET /projects/{id}/runs/{run_id})',
      statusText || 'none',
      `${runs.length} succeeded`,
      succeeded === runs.length && runs.length > 0,
      failures,
    ),
    checkRow(
      name,
      'steps not succeeded in those runs',
      stepTrouble.length ? `${stepTrouble.length}: ${stepTrouble.slice(0, 3).join(', ')}` : '0',
      '0',
      stepTrouble.length === 0,
      failures,
    ),
    checkRow(
      name,
      'step jobs dispatched / dispatches / completed',
      `${fmt.int(dispatched)} / ${fmt.int(dispatches)} / ${fmt.int(completed)}`,
      `${fmt.int(n)} / ${fmt.int(n)} / ${fmt.int(n)}`,
      dispatched === n && dispatches === n && completed === n,
      failures,
    ),
    checkRow(name, 'completions refused', errors.length ? `${errors.length}: ${errors[0]}` : '0', '0', errors.length === 0, failures),
    checkRow(
      name,
      'steps claimed before their blocker committed / transitions unseen',
      `${early} / ${missing}`,
      '0 / 0',
      early === 0 && missing === 0 && lat.length === expectedTransitions,
      failures,
    ),
    checkRow(
      name,
      'attempts / jobs with one / done (database)',
      `${fmt.int(db.attempts)} / ${fmt.int(db.jobs_attempted)} / ${fmt.int(db.done)}`,
      `${fmt.int(n)} / ${fmt.int(n)} / ${fmt.int(n)}`,
      db.attempts === n && db.jobs_attempted === n && db.done === n,
      failures,
    ),
  ];
}

interface Ctx {
  api: Api;
  projectId: string;
  db: Awaited<ReturnType<typeof kernelWithProject>>['srv']['kernel']['db'];
  w: ReturnType<typeof completingWorker>;
}

/** Step-transition latency of linear pipelines. Returns the failed checks. */
export async function runPipelinesBench(): Promise<string[]> {
  const failures: string[] = [];
  const rows: Row[] = [];
  const w = completingWorker();
  const { srv, api, projectId } = await kernelWithProject(['api', 'orchestrator'], (c) => c.registerInstance(WorkerDispatcherToken, w.worker));
  let strays: string[] = [];
  const allRuns: Run[] = [];
  try {
    w.use(srv.kernel.container.resolve(Claims));
    const sync = await api.post(`/projects/${projectId}/manifest`, { yaml: manifest(STEPS) });
    if (sync.statusCode >= 300) throw new Error(`manifest sync: ${sync.statusCode} ${JSON.stringify(sync.body)}`);
    const ctx: Ctx = { api, projectId, db: srv.kernel.db, w };

    const warm = await runPass(api, projectId, w, WARMUP_RUNS, 1);
    allRuns.push(...warm.runs);
    if (warm.stuck.length) {
      rows.push(...(await report(`Warm-up: ${WARMUP_RUNS} runs, one at a time`, warm, WARMUP_RUNS, { cpu: 'n/a', pool: 'n/a', waits: 'n/a' }, ctx, failures)));
    } else {
      for (const concurrency of CONCURRENCY) {
        const name = `Step-transition latency: step k's Claims.complete committed → step k+1 dispatched, ${RUNS} ${STEPS}-step linear runs, ${
          concurrency === 1 ? 'one at a time' : concurrency >= RUNS ? 'all started back to back' : `at most ${concurrency} at once`
        }`;
        const waits = await pgWaits(srv.kernel.databaseUrl);
        const meter = cpuMeter();
        const pool = poolSampler(srv.kernel.db);
        const pass = await runPass(api, projectId, w, RUNS, concurrency);
        const load = { cpu: meter.stop(), pool: pool.stop(), waits: await waits.stop() };
        allRuns.push(...pass.runs);
        rows.push(...(await report(name, pass, RUNS, load, ctx, failures)));
        if (pass.stuck.length) break;
      }
    }
    // Nothing but the runs' step jobs was dispatched.
    const ours = new Set(allRuns.flatMap((r) => r.jobIds));
    strays = [...w.seen.keys()].filter((id) => !ours.has(id));
  } finally {
    await srv.stop();
  }
  if (strays.length) failures.push(`pipelines: ${strays.length} dispatched job(s) not a step of any run: ${strays.slice(0, 3).join(', ')}`);

  printTable('svc pipelines benchmark', rows, [
    `a kernel with roles [api, orchestrator] in this process; its JobDispatcher (woken in-process after each commit, as in the jobs dispatch scenario) hands claimed attempts to a WorkerDispatcher registered via configure, ` +
      `which notes the time and at once completes the attempt (success) through the jobs plugin's Claims.complete with the lease token (what the worker's completion route calls)`,
    `one manifest synced (POST /projects/{id}/manifest): pipeline "${PIPELINE}" of ${STEPS} script steps, each depends_on the one before; runs started by POST /projects/{id}/pipelines/${PIPELINE}/run (server.inject, no sockets); ${WARMUP_RUNS} warm-up runs first, not measured`,
    `latency = the dispatch callback of step k+1's attempt − the moment Claims.complete of step k resolved (its transaction, with the run's update, committed); ${RUNS} × ${STEPS - 1} transitions per pass`,
    'the "of which" rows split a transition: until the claimNext call that claimed the step began (the dispatcher finishing the pass it was in, then waking; a call begun just before the commit can still see it, so this may be < 0), that call (one transaction), and handing over (dispatches before it in the same batch); claimNext is timed by a wrapper on the kernel’s Claims instance',
    '"one at a time": the next run is started when every step of the previous one completed; "all started back to back": the POSTs follow one another without waiting, so runs overlap and transitions queue behind each other on the one dispatcher and the pool',
    'kernel pool: the kernel’s one knex pool (database.pool_max), shared by the API routes, the dispatcher’s claims and the completions, sampled every 5 ms; PostgreSQL backends: pg_stat_activity samples every 25 ms by wait event, as in the jobs group; CPU cores: machine = this process + embedded PostgreSQL + others (the PostgreSQL server when DATABASE_URL is set, and anything else running)',
    'the checks: every run succeeded with every step succeeded (API), every step job dispatched and completed exactly once, never before its blocker committed, and in the database one attempt per step job and every step job done',
  ]);
  return failures;
}
