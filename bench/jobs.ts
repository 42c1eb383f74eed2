import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { createKnex, type Db } from '../core/db/knex.ts';
import { createLogger } from '../core/logger.ts';
import { JobCreation } from '../plugins/jobs/job/create.ts';
import type { Grant, Principal } from '../core/auth/principal.ts';
import { ROLE_PERMISSIONS } from '../core/auth/permissions.ts';
import { WorkerDispatcherToken, type ClaimedAttempt, type WorkerDispatcher } from '../core/ports/worker.ts';
import { startBenchServer } from './server.ts';
import { claimLoop, claimsOver, type ClaimLog } from './claim-loop.ts';
import { ascending, checkRow, clock, cpuMeter, fmt, goalRow, kernelWithProject, knob, percentile, pgWaits, printTable, seedProject, type Row } from './lib.ts';

// 1. Claim throughput
const CLAIM_JOBS = knob('BENCH_CLAIM_JOBS', 20_000);
const CLAIMERS = knob('BENCH_CLAIMERS', 8);
/** Each run stops here even if the backlog is not drained (the checks then count what is left). */
const CLAIM_SECONDS = knob('BENCH_CLAIM_SECONDS', 12);
type ClaimMode = 'process' | 'inproc';
/**
 * `mode:batch` runs, each over a fresh backlog. process: every claimer its own Node process and
 * connection (as separate orchestrators); inproc: concurrent loops over one knex pool in this
 * process. batch: claimNext's limit (1 = a transaction per job; the dispatcher asks for up to 32).
 */
const CLAIM_RUNS = (process.env.BENCH_CLAIM_RUNS ?? 'process:1,process:32,inproc:32').split(',').map((r) => {
  const [mode, batch] = r.split(':');
  if ((mode !== 'process' && mode !== 'inproc') || !(Number(batch) >= 1)) throw new Error(`BENCH_CLAIM_RUNS: "${r}" is not process:<batch> or inproc:<batch>`);
  return { mode: mode as ClaimMode, batch: Number(batch) };
});
const CLAIM_GOAL_PER_S = 2_000;

// 2. Dispatch latency
const DISPATCH_JOBS = knob('BENCH_DISPATCH_JOBS', 500);
const DISPATCH_WARMUP = 20;
const DISPATCH_EVERY_MS = knob('BENCH_DISPATCH_EVERY_MS', 20);

// 3. API ingest
const INGEST_DURATION_S = knob('BENCH_DURATION', 10);
const INGEST_CONNECTIONS = knob('BENCH_CONNECTIONS', 16);
const INGEST_GOAL_PER_S = 2_500;

const silent = createLogger('silent');

// ─── 1. Claim throughput ─────────────────────────────────────────────────────────────────────

/** N ready no-op jobs in one INSERT through the real table (triggers, indexes, defaults), distinct created_at in id order. */
async function seedBacklog(db: Db, projectId: string, slug: string, userId: string, n: number): Promise<void> {
  await db.raw(
    `INSERT INTO jobs (id, project_id, title, description, hints, created_by, created_at, updated_at)
     SELECT ? || '-' || lpad(to_hex(i), 8, '0'), ?, 'no-op ' || i, 'bench no-op job ' || i, '{"permission_policy":"yolo"}', ?,
            now() - make_interval(secs => (? - i) / 1e6), now()
     FROM generate_series(1, ?) AS i`,
    [slug, projectId, userId, n, n],
  );
  await db.raw('ANALYZE jobs');
}

function forkClaimer(url: string, owner: string, batch: number): ChildProcess {
  return fork(fileURLToPath(new URL('./claimer.ts', import.meta.url)), [url, owner, String(batch)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

interface ClaimRun {
  logs: ClaimLog[];
  cpu: string;
  waits: string;
}

/** Eight claimer processes: all connected before the clock starts, all told the same deadline. */
async function claimersInProcesses(url: string, batch: number): Promise<ClaimRun> {
  const children = Array.from({ length: CLAIMERS }, (_, i) => forkClaimer(url, `bench-claimer-${i + 1}`, batch));
  let finished = false;
  try {
    const inboxes = children.map((child) => {
      const queue: any[] = [];
      const waiters: ((m: any) => void)[] = [];
      child.on('message', (m) => (waiters.length ? waiters.shift()!(m) : queue.push(m)));
      child.once('exit', (code) => waiters.splice(0).forEach((w) => w({ type: 'error', message: `exited with ${code}` })));
      return () => new Promise<any>((resolve) => (queue.length ? resolve(queue.shift()) : waiters.push(resolve)));
    });
    const expect = async (next: () => Promise<any>, type: string) => {
      const m = await next();
      if (m.type !== type) throw new Error(`claimer: ${m.message ?? JSON.stringify(m)}`);
      return m;
    };
    await Promise.all(inboxes.map((next) => expect(next, 'ready')));
    const waits = await pgWaits(url);
    const cpu = cpuMeter();
    const until = clock() + CLAIM_SECONDS * 1000;
    for (const child of children) child.send({ type: 'go', until });
    const logs = (await Promise.all(inboxes.map((next) => expect(next, 'done')))).map((m) => m.log as ClaimLog);
    const run = { logs, cpu: cpu.stop(), waits: await waits.stop() };
    for (const child of children) child.send({ type: 'exit' });
    finished = true;
    return run;
  } finally {
    // After a failure the others may still wait for `go` or `exit`: stop them.
    await Promise.all(
      children.map((c) => {
        if (c.exitCode !== null || c.signalCode !== null) return null;
        const exited = new Promise((r) => c.once('exit', r));
        if (!finished) c.kill();
        return exited;
      }),
    );
  }
}

/** Eight concurrent claim loops in this process over one pool of eight connections. */
async function claimersInProcess(url: string, batch: number): Promise<ClaimRun> {
  const db = createKnex(url, CLAIMERS, silent);
  try {
    await Promise.all(Array.from({ length: CLAIMERS }, () => db.raw('SELECT 1'))); // open the pool first
    const claims = claimsOver(db, url);
    const waits = await pgWaits(url);
    const cpu = cpuMeter();
    const until = clock() + CLAIM_SECONDS * 1000;
    const logs = await Promise.all(Array.from({ length: CLAIMERS }, (_, i) => claimLoop(claims, db, `bench-claimer-${i + 1}`, batch, until)));
    return { logs, cpu: cpu.stop(), waits: await waits.stop() };
  } finally {
    await db.destroy();
  }
}

/** Claims/s over each quarter of what was claimed: a queue that slows as it drains shows here. */
function quarterRates(logs: ClaimLog[], claimed: number): string {
  const calls = logs.flatMap((l) => l.ends.map((end, i) => ({ end, n: l.counts[i] }))).sort((a, b) => a.end - b.end);
  const rates: string[] = [];
  let [done, doneBefore, from, mark] = [0, 0, Math.min(...logs.map((l) => l.start)), 1];
  for (const c of calls) {
    done += c.n;
    if (done >= (mark * claimed) / 4) {
      rates.push(fmt.int((done - doneBefore) / ((c.end - from) / 1000)));
      [doneBefore, from, mark] = [done, c.end, mark + 1];
    }
  }
  return rates.join(' → ');
}

async function claimThroughput(failures: string[]): Promise<Row[]> {
  const { srv, userId, projectId, slug } = await kernelWithProject(['api']);
  const db = srv.kernel.db;
  const rows: Row[] = [];
  try {
    for (const { mode, batch } of CLAIM_RUNS) {
      const name = `Claim throughput: claimNext(owner, ${batch}), ${CLAIMERS} claimers ${mode === 'process' ? 'in their own processes' : 'in one process over one pool'}`;
      await db.raw('TRUNCATE jobs CASCADE'); // a fresh backlog (table and indexes) for each run
      await seedBacklog(db, projectId, slug, userId, CLAIM_JOBS);
      const { logs, cpu, waits } =
        mode === 'process' ? await claimersInProcesses(srv.kernel.databaseUrl, batch) : await claimersInProcess(srv.kernel.databaseUrl, batch);

      const start = Math.min(...logs.map((l) => l.start));
      const wall = (Math.max(...logs.map((l) => l.end)) - start) / 1000;
      const ids = logs.flatMap((l) => l.ids);
      const claimed = ids.length;
      const unique = new Set(ids).size;
      const timedOut = logs.some((l) => l.timedOut);
      const durations = ascending(logs.flatMap((l) => l.durations));
      const perJob = ascending(logs.flatMap((l) => l.durations.map((d, i) => d / l.counts[i])));
      const {
        rows: [found],
      } = await db.raw(
        `SELECT (SELECT count(*) FROM job_attempts) AS attempts, (SELECT count(DISTINCT job_id) FROM job_attempts) AS jobs_attempted,
                (SELECT count(*) FROM job_attempts WHERE attempt_number <> 1 OR status <> 'running') AS odd_attempts,
                (SELECT count(*) FROM jobs WHERE phase = 'active') AS active, (SELECT count(*) FROM jobs WHERE phase = 'ready') AS ready`,
      );
      const left = CLAIM_JOBS - claimed;
      rows.push(
        goalRow(name, 'claims/s overall', claimed / wall, (v) => fmt.rate(v, 'claims/s'), { atLeast: CLAIM_GOAL_PER_S }),
        { scenario: name, figure: 'claims/s by quarter of the claims', value: quarterRates(logs, claimed) },
        {
          scenario: name,
          figure: 'claimed, wall time',
          value: `${fmt.int(claimed)} of ${fmt.int(CLAIM_JOBS)} in ${fmt.s(wall)}${timedOut ? ` (${CLAIM_SECONDS} s limit)` : ''}`,
        },
        { scenario: name, figure: 'claimNext call p50 (one transaction)', value: fmt.ms(percentile(durations, 50)), goal: 'none set' },
        { scenario: name, figure: 'claimNext call p99 (one transaction)', value: fmt.ms(percentile(durations, 99)), goal: 'none set' },
        ...(batch > 1
          ? [
              { scenario: name, figure: 'per claimed job p50 (call ÷ jobs in it)', value: fmt.ms(percentile(perJob, 50)) },
              { scenario: name, figure: 'per claimed job p99 (call ÷ jobs in it)', value: fmt.ms(percentile(perJob, 99)) },
            ]
          : []),
        {
          scenario: name,
          figure: 'claims per claimer (min / max)',
          value: `${fmt.int(Math.min(...logs.map((l) => l.ids.length)))} / ${fmt.int(Math.max(...logs.map((l) => l.ids.length)))}`,
        },
        { scenario: name, figure: 'empty calls (rows locked by others; retried)', value: fmt.int(logs.reduce((s, l) => s + l.empty, 0)) },
        { scenario: name, figure: 'CPU cores: machine = Node + PG + others', value: cpu },
        { scenario: name, figure: 'PostgreSQL backends on CPU / waiting', value: waits },
        checkRow(
          name,
          'ids handed out / distinct',
          `${fmt.int(claimed)} / ${fmt.int(unique)}`,
          timedOut ? 'equal' : `${fmt.int(CLAIM_JOBS)} / ${fmt.int(CLAIM_JOBS)}`,
          unique === claimed && (timedOut || claimed === CLAIM_JOBS),
          failures,
        ),
        checkRow(
          name,
          'attempts / jobs with one / active / ready',
          `${fmt.int(found.attempts)} / ${fmt.int(found.jobs_attempted)} / ${fmt.int(found.active)} / ${fmt.int(found.ready)}`,
          `${fmt.int(claimed)} / ${fmt.int(claimed)} / ${fmt.int(claimed)} / ${fmt.int(left)}`,
          found.attempts === claimed &&
            found.jobs_attempted === claimed &&
            found.active === claimed &&
            found.ready === left &&
            found.odd_attempts === 0 &&
            (timedOut || left === 0),
          failures,
        ),
      );
    }
  } finally {
    await srv.stop();
  }
  return rows;
}

// ─── 2. Dispatch latency ─────────────────────────────────────────────────────────────────────

async function dispatchLatency(failures: string[]): Promise<Row[]> {
  const dispatchedAt = new Map<string, number>();
  let dispatches = 0;
  const worker: WorkerDispatcher = {
    capacity: () => 1_000_000,
    dispatch: async (a: ClaimedAttempt) => {
      const now = performance.now();
      dispatches++;
      if (!dispatchedAt.has(a.jobId)) dispatchedAt.set(a.jobId, now);
    },
  };
  const { srv, userId, projectId } = await kernelWithProject(['orchestrator'], (c) => c.registerInstance(WorkerDispatcherToken, worker));
  // Jobs go in through the plugin's own creation path (its batched INSERT and the wake-up after commit), without HTTP.
  const creation = srv.kernel.container.resolve(JobCreation);
  const principal: Principal = {
    kind: 'user',
    id: userId,
    email: 'bench@example.com',
    isAdmin: true,
    scope: null,
    roleCap: null,
    expiresAt: '',
    permissions: null,
  };
  const {
    rows: [{ org_id: orgId }],
  } = await srv.kernel.db.raw('SELECT org_id FROM projects WHERE id = ?', [projectId]);
  const grant: Grant = { orgId, projectId, role: 'owner', permissions: ROLE_PERMISSIONS.owner };
  const committedAt = new Map<string, number>();
  const insertRtt: number[] = [];
  const total = DISPATCH_WARMUP + DISPATCH_JOBS;
  const order: string[] = [];
  let cpu = '';
  let stored = { attempts: 0, jobs: 0, active: 0 };
  try {
    const meter = cpuMeter();
    const t0 = performance.now();
    for (let i = 0; i < total; i++) {
      const due = t0 + i * DISPATCH_EVERY_MS;
      if (due > performance.now()) await sleep(due - performance.now());
      const sent = performance.now();
      const job = await creation.create(principal, grant, { description: `bench dispatch job ${i}` });
      const committed = performance.now(); // create returns after its INSERT committed; the wake-up NOTIFY is on its way
      committedAt.set(job.id, committed);
      insertRtt.push(committed - sent);
      order.push(job.id);
    }
    const deadline = Date.now() + 10_000;
    while (dispatchedAt.size < total && Date.now() < deadline) await sleep(10);
    cpu = meter.stop();
    await sleep(200); // a late duplicate would show up here
    [stored] = (
      await srv.kernel.db.raw(
        `SELECT count(*) AS attempts, count(DISTINCT job_id) AS jobs, (SELECT count(*) FROM jobs WHERE phase = 'active') AS active FROM job_attempts`,
      )
    ).rows;
  } finally {
    await srv.stop();
  }
  const measured = order.slice(DISPATCH_WARMUP).filter((id) => dispatchedAt.has(id));
  const lat = ascending(measured.map((id) => dispatchedAt.get(id)! - committedAt.get(id)!));
  const name = 'Dispatch latency: JobCreation.create returned (committed) → WorkerDispatcher.dispatch, orchestrator role';
  return [
    goalRow(name, 'p50', percentile(lat, 50), fmt.ms, { atMost: 5 }),
    { scenario: name, figure: 'p95', value: fmt.ms(percentile(lat, 95)), goal: 'none set' },
    goalRow(name, 'p99', percentile(lat, 99), fmt.ms, { atMost: 25 }),
    { scenario: name, figure: 'max', value: fmt.ms(lat[lat.length - 1]) },
    { scenario: name, figure: 'JobCreation.create p50 (for scale)', value: fmt.ms(percentile(ascending(insertRtt), 50)) },
    { scenario: name, figure: 'CPU cores: machine = Node + PG + others', value: cpu },
    checkRow(
      name,
      'jobs dispatched / dispatches',
      `${fmt.int(dispatchedAt.size)} / ${fmt.int(dispatches)}`,
      `${total} / ${total}`,
      dispatchedAt.size === total && dispatches === total,
      failures,
    ),
    checkRow(
      name,
      'attempts / jobs with one / active (database)',
      `${stored.attempts} / ${stored.jobs} / ${stored.active}`,
      `${total} / ${total} / ${total}`,
      stored.attempts === total && stored.jobs === total && stored.active === total,
      failures,
    ),
  ];
}

// ─── 3. API ingest ───────────────────────────────────────────────────────────────────────────

const DESCRIPTION = [
  'The retry test in payments fails about one run in twenty on CI.',
  '',
  'Steps: run `npm test -- payments/retry` in a loop; the third attempt sometimes sees the',
  "previous attempt's idempotency key. Make the fake clock deterministic, keep the public",
  'behaviour, and add a regression test. Do not touch the card network adapters.',
].join('\n');

function ingestBody(n: number): string {
  return JSON.stringify({
    description: `Fix the flaky retry test #${n}\n\n${DESCRIPTION}`,
    issue_type: 'bug',
    labels: ['ci', 'flaky', 'payments'],
    priority: n % 5,
    harness: 'coder',
    model: 'bench-model',
    reasoning_effort: 'medium',
    hints: { max_attempts: 3, timeout_seconds: 1800, worker_type: 'default' },
    git: { branch: `fix/flaky-retry-${n}`, create_branch: 'if_missing', commit: 'auto', push: 'on_success' },
    due_at: new Date(Date.now() + 86_400_000).toISOString(),
  });
}

async function apiIngest(failures: string[]): Promise<Row[]> {
  const server = await startBenchServer();
  try {
    const { token, projectId } = await seedProject(server.url);
    const path = `/projects/${projectId}/jobs`;
    let n = 0;
    const acked: string[] = [];
    const waits = await pgWaits(server.databaseUrl);
    const meter = cpuMeter();
    const result = await autocannon({
      url: server.url + path,
      connections: INGEST_CONNECTIONS,
      duration: INGEST_DURATION_S,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      requests: [
        {
          method: 'POST',
          path,
          setupRequest: (req: any) => ({ ...req, body: ingestBody(n++) }),
          onResponse: (status: number, body: string) => {
            if (status === 201) acked.push(/"id":"([^"]+)"/.exec(body)![1]);
          },
        },
      ],
    });
    const cpu = meter.stop();
    const waited = await waits.stop();
    await sleep(500); // requests cut off when autocannon stopped may still be committing
    const check = createKnex(server.databaseUrl, 1, silent);
    let counts: { rows: number; acked_found: number };
    try {
      const {
        rows: [r],
      } = await check.raw(
        'SELECT (SELECT count(*) FROM jobs WHERE project_id = ?) AS rows, (SELECT count(*) FROM jobs WHERE id = ANY(?::text[])) AS acked_found',
        [projectId, acked],
      );
      counts = r;
    } finally {
      await check.destroy();
    }
    const name = `API ingest: POST ${'/projects/{id}/jobs'}, ${INGEST_CONNECTIONS} connections, ${INGEST_DURATION_S} s`;
    const twoXX = result['2xx'];
    const errors = result.non2xx + result.errors + result.timeouts;
    const cutOff = counts.rows - twoXX;
    return [
      goalRow(name, 'throughput', result.requests.average, (v) => fmt.rate(v, 'req/s'), { atLeast: INGEST_GOAL_PER_S }),
      { scenario: name, figure: 'latency p50', value: fmt.ms(result.latency.p50), goal: 'none set' },
      { scenario: name, figure: 'latency p99', value: fmt.ms(result.latency.p99), goal: 'none set' },
      { scenario: name, figure: 'CPU cores: machine = Node + PG + others', value: cpu },
      { scenario: name, figure: 'PostgreSQL backends on CPU / waiting', value: waited },
      checkRow(name, 'non-2xx + errors + timeouts', `${fmt.int(errors)} of ${fmt.int(result.requests.total)}`, '0', errors === 0, failures),
      checkRow(
        name,
        '201 ids acknowledged / distinct / found as rows',
        `${fmt.int(acked.length)} / ${fmt.int(new Set(acked).size)} / ${fmt.int(counts.acked_found)}`,
        'all equal to the 2xx count',
        acked.length === twoXX && new Set(acked).size === twoXX && counts.acked_found === twoXX,
        failures,
      ),
      checkRow(
        name,
        'rows − 2xx (requests cut off at the stop)',
        `${fmt.int(counts.rows)} − ${fmt.int(twoXX)} = ${cutOff}`,
        `0 … ${INGEST_CONNECTIONS} (in flight at the stop)`,
        cutOff >= 0 && cutOff <= INGEST_CONNECTIONS,
        failures,
      ),
    ];
  } finally {
    await server.stop();
  }
}

// ─── the group ───────────────────────────────────────────────────────────────────────────────

/** The jobs scenarios of issue 3 (claim throughput, dispatch latency, API ingest). Returns the failed checks. */
export async function runJobsBench(which: readonly string[]): Promise<string[]> {
  const failures: string[] = [];
  const rows: Row[] = [];
  const notes: string[] = [];
  if (which.includes('claim')) {
    rows.push(...(await claimThroughput(failures)));
    notes.push(
      `claim throughput: ${fmt.int(CLAIM_JOBS)} ready no-op jobs put in by one INSERT … SELECT into the real jobs table (trigger and indexes on, distinct created_at, ANALYZE after), ` +
        `then ${CLAIMERS} claimers calling the plugin's Claims.claimNext(owner, batch) until nothing is ready or ${CLAIM_SECONDS} s are up; ` +
        `"in own processes": each claimer a Node process with one connection (separate orchestrators); "in one process, one pool": ${CLAIMERS} concurrent loops in this process over one knex pool of ${CLAIMERS}`,
      'claims/s = jobs claimed ÷ wall time from the start signal to the last claimer stopping; a call = one claimNext transaction (BEGIN, one SKIP LOCKED scan + INSERT attempts + UPDATE jobs statement for the gate-less jobs, per-job gate path for gated ones, COMMIT)',
      'the checks: every id handed out once, and in the database exactly one attempt (number 1, running) per claimed job, the claimed jobs active, the rest still ready',
    );
  }
  if (which.includes('dispatch')) {
    rows.push(...(await dispatchLatency(failures)));
    notes.push(
      `dispatch latency: a kernel with roles [orchestrator] in this process, its JobDispatcher handing attempts to a WorkerDispatcher registered via configure that timestamps each dispatch; ` +
        `jobs created one at a time every ${DISPATCH_EVERY_MS} ms through the jobs plugin's JobCreation.create (no HTTP) in the same process; ${DISPATCH_JOBS} measured after ${DISPATCH_WARMUP} warm-up jobs`,
      'latency = dispatch callback time − the time create returned (its INSERT committed); after commit the claimer in this process is woken directly, others by the coalesced NOTIFY svc_jobs',
    );
  }
  if (which.includes('ingest')) {
    rows.push(...(await apiIngest(failures)));
    notes.push(
      `API ingest: autocannon, ${INGEST_CONNECTIONS} connections, ${INGEST_DURATION_S} s, against svc serve (api role) in its own process; a realistic CreateJobRequest (multi-line description, labels, priority, harness, hints, git, due_at; title generated)`,
      'autocannon drops the requests in flight when its time is up: the server may still commit them, so rows may exceed the 2xx count by at most the connection count; every acknowledged id must be a row',
    );
  }
  printTable('svc jobs benchmark', rows, [
    ...notes,
    'CPU cores, averaged over the measured interval: machine (/proc/stat) = this benchmark’s Node processes (this one, claimers, svc server) + its embedded PostgreSQL + others (everything else on the machine, including the PostgreSQL server when DATABASE_URL is set)',
    'PostgreSQL backends: share of pg_stat_activity samples (every 25 ms) of the benchmark database’s active backends by wait event (WalSync: WAL flush at commit; WALWrite: queued behind it; object: the NOTIFY commit lock; CPU: no wait)',
    'the load generator, the server or claimers, and PostgreSQL share the machine’s cores',
  ]);
  return failures;
}
