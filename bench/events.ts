import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowLauncherToken, type WorkflowLauncher } from '../core/ports/launchers.ts';
import { ascending, checkRow, fmt, goalRow, kernelWithProject, knob, percentile, printTable, type Row } from './lib.ts';

const EVENTS = knob('BENCH_EVENTS', 500);
/** One measured pass per entry: that many POSTs in flight at once (1: one event at a time). */
const CONCURRENCY = (process.env.BENCH_EVENT_CONCURRENCY ?? '1,16').split(',').map((c) => {
  const n = Number(c);
  if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_EVENT_CONCURRENCY: "${c}" is not a positive integer`);
  return n;
});
const WARMUP = 20;
const GOAL_P50_MS = 20;
const TYPE = 'manual.bench';
const MANIFEST = `
workflows:
  react:
    trigger: { event: { type: ${TYPE} } }
    steps:
      - { name: work, run: "true" }
  other:
    trigger: { event: push, branch: main }
    steps:
      - { name: work, run: "true" }
`;

type Kernel = Awaited<ReturnType<typeof kernelWithProject>>;

/**
 * Times the WorkflowLauncher the router calls on every match: notes when each triggered workflow's
 * job creation has committed, keyed by the `n` of the event payload. The router took the launcher
 * when its plugin registered (long before this runs), so registering a wrapper now would never be
 * called: the launcher the container holds (the same object the router holds) is wrapped in place.
 */
function timeLaunches(k: Kernel) {
  const launcher = k.srv.server.app.container.resolve(WorkflowLauncherToken);
  const real = launcher.invokeWorkflow.bind(launcher);
  const created = new Map<number, { at: number; jobId: string; count: number }>();
  const timed: WorkflowLauncher['invokeWorkflow'] = async (creator, projectId, name, input, event) => {
    const result = await real(creator, projectId, name, input, event);
    const n = Number(input.n);
    const seen = created.get(n);
    if (seen) seen.count++;
    else created.set(n, { at: performance.now(), jobId: result.job_id, count: 1 });
    return result;
  };
  launcher.invokeWorkflow = timed;
  return created;
}

/** How long one event may take to reach its job before a pass gives up on it (the bench never hangs). */
const EVENT_DEADLINE_MS = 10_000;

interface Pass {
  concurrency: number;
  latencies: Float64Array;
  postLatencies: Float64Array;
  missing: number;
  duplicates: number;
  /** Triggered jobs created per second, from the first POST to the last job. */
  rate: number;
}

async function pass(k: Kernel, created: ReturnType<typeof timeLaunches>, first: number, count: number, concurrency: number): Promise<Pass> {
  const posted = new Map<number, { at: number; postMs: number }>();
  let next = first;
  const poster = async () => {
    while (next < first + count) {
      const n = next++;
      const at = performance.now();
      const res = await k.api.post(`/projects/${k.projectId}/events`, { type: TYPE, payload: { n } });
      if (res.statusCode !== 201) throw new Error(`event: ${res.statusCode} ${JSON.stringify(res.body)}`);
      posted.set(n, { at, postMs: performance.now() - at });
      if (concurrency === 1) {
        const deadline = Date.now() + EVENT_DEADLINE_MS;
        while (!created.has(n) && Date.now() < deadline) await sleep(1);
        if (!created.has(n)) throw new Error(`event ${n} reached no workflow job within ${EVENT_DEADLINE_MS} ms: is the launcher timed?`);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, poster));
  const deadline = Date.now() + 30_000 + count * 20;
  const done = () => [...posted.keys()].every((n) => created.has(n));
  while (!done() && Date.now() < deadline) await sleep(5);
  const latencies: number[] = [];
  let missing = 0;
  let duplicates = 0;
  for (const [n, p] of posted) {
    const c = created.get(n);
    if (!c) missing++;
    else {
      latencies.push(c.at - p.at);
      if (c.count > 1) duplicates++;
    }
  }
  const start = Math.min(...[...posted.values()].map((p) => p.at));
  const end = Math.max(...[...posted.keys()].map((n) => created.get(n)?.at ?? start));
  const rate = (latencies.length * 1000) / (end - start);
  return { concurrency, latencies: ascending(latencies), postLatencies: ascending([...posted.values()].map((p) => p.postMs)), missing, duplicates, rate };
}

/** Events of the bench's type completed, once `total` are or after 10 s. */
async function completedEvents(k: Kernel, total: number): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await k.srv.kernel.db.raw(`SELECT count(*)::int AS n FROM events WHERE type = ? AND status = 'completed'`, [TYPE]);
    if (rows[0].n >= total || Date.now() > deadline) return rows[0].n;
    await sleep(20);
  }
}

/** Event → triggered workflow job created: POST /projects/{id}/events until the router's workflow invoke has committed. */
export async function runEventsBench(): Promise<string[]> {
  const failures: string[] = [];
  const rows: Row[] = [];
  const k = await kernelWithProject(['api', 'orchestrator']);
  try {
    const sync = await k.api.post(`/projects/${k.projectId}/manifest`, { yaml: MANIFEST });
    if (sync.statusCode >= 300) throw new Error(`manifest sync: ${sync.statusCode} ${JSON.stringify(sync.body)}`);
    const created = timeLaunches(k);
    await pass(k, created, -WARMUP, WARMUP, 1);
    let first = 0;
    for (const concurrency of CONCURRENCY) {
      const p = await pass(k, created, first, EVENTS, concurrency);
      first += EVENTS;
      const scenario = `${EVENTS} events, ${concurrency} in flight`;
      rows.push(goalRow(scenario, 'event → workflow job created p50', percentile(p.latencies, 50), fmt.ms, { atMost: GOAL_P50_MS }));
      rows.push({ scenario, figure: 'event → workflow job created p99', value: fmt.ms(percentile(p.latencies, 99)) });
      rows.push({ scenario, figure: 'events routed to their job', value: fmt.rate(p.rate) });
      rows.push({
        scenario,
        figure: 'POST /events p50 / p99',
        value: `${fmt.ms(percentile(p.postLatencies, 50))} / ${fmt.ms(percentile(p.postLatencies, 99))}`,
      });
      rows.push(checkRow(scenario, 'events without their job', String(p.missing), '0', p.missing === 0, failures));
      rows.push(checkRow(scenario, 'events that started two jobs', String(p.duplicates), '0', p.duplicates === 0, failures));
    }
    // The router records an event's routing after its job has committed: wait for the last ones.
    const total = WARMUP + EVENTS * CONCURRENCY.length;
    const completed = await completedEvents(k, total);
    rows.push(checkRow('all passes', 'events completed', String(completed), String(total), completed === total, failures));
  } finally {
    await k.srv.stop();
  }
  printTable('svc events benchmark', rows, [
    `one manifest with two triggered workflows (one matches ${TYPE}); events posted with server.inject as the admin, routed by the orchestrator's event router in the same process (woken after commit) to WorkflowLauncher.invokeWorkflow`,
    'latency: from the start of the POST to the commit of the triggered workflow job (a wrapper around the launcher notes it); with 1 in flight the next event is posted once the job exists',
    'with 16 in flight the POSTs outrun the router (same process, same cores): the latency there is mostly queueing; the rate is what the router sustains',
    `${WARMUP} warm-up events first, not measured; knobs BENCH_EVENTS, BENCH_EVENT_CONCURRENCY`,
  ]);
  return failures;
}
