import { availableParallelism, loadavg } from 'node:os';
import { ascending, checkRow, fmt, goalRow, kernelWithProject, knob, percentile, printTable, type Row } from './lib.ts';

const JOBS = knob('BENCH_ANALYTICS_JOBS', 100_000);
const RUNS = knob('BENCH_ANALYTICS_RUNS', 10_000);
const PROJECTS = knob('BENCH_ANALYTICS_PROJECTS', 10);
const REQUESTS = knob('BENCH_ANALYTICS_REQUESTS', 500);
const WARMUP = 30;
const GOAL_P99_MS = 50;
const DAY_S = 86_400;

type Api = Awaited<ReturnType<typeof kernelWithProject>>['api'];

/** WARMUP requests, then REQUESTS sequential ones: their latencies, ascending, and the last body. */
async function measure(api: Api, path: string): Promise<{ sorted: Float64Array; last: any }> {
  for (let i = 0; i < WARMUP; i++) await api.get(path);
  const latencies: number[] = [];
  let last: any = null;
  for (let i = 0; i < REQUESTS; i++) {
    const start = performance.now();
    const res = await api.get(path);
    latencies.push(performance.now() - start);
    if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${JSON.stringify(res.body)}`);
    last = res.body;
  }
  return { sorted: ascending(latencies), last };
}

/**
 * `npm run bench -- analytics`: GET /orgs/{id}/analytics/summary (in-process, server.inject, as an
 * org member would call it) over one org with JOBS jobs and RUNS pipeline runs spread over 90 days
 * across PROJECTS projects, seeded with SQL in the benchmark's own database. Reports p50 and p99
 * per window and checks the figures against direct counts.
 */
export async function runAnalyticsBench(): Promise<string[]> {
  const failures: string[] = [];
  const rows: Row[] = [];
  const { srv, api, projectId } = await kernelWithProject(['api']);
  try {
    const db = srv.kernel.db;
    const { org_id: orgId } = await db('projects').where({ id: projectId }).first('org_id');
    const projectIds = [projectId];
    for (let i = 1; i < PROJECTS; i++) {
      const p = await api.post('/projects', { org_id: orgId, name: `Bench ${i}`, slug: `bnch${i}` });
      if (p.statusCode !== 201) throw new Error(`project: ${p.statusCode} ${JSON.stringify(p.body)}`);
      projectIds.push(p.body.id);
    }
    const seeded = Date.now();
    // Created uniformly over 90 days; 70% done, 10% failed, 5% active, the rest ready. Closed a minute to a day after creation.
    await db.raw(
      `INSERT INTO jobs (id, project_id, title, phase, created_at, updated_at, closed_at, close_reason)
       SELECT 'bench-' || lpad(to_hex(i), 8, '0'), (?::text[])[1 + i % ?], 'bench job ' || i, ph, c, c,
              CASE WHEN ph IN ('done', 'cancelled') THEN c + make_interval(secs => 60 + (i * 7919) % ${DAY_S}) END,
              CASE WHEN ph = 'cancelled' THEN 'attempt 1 failed (exit 1): bench' WHEN ph = 'done' THEN 'completed' END
       FROM (SELECT i, now() - make_interval(secs => (i::bigint * 7777) % (90 * ${DAY_S})) AS c,
                    CASE WHEN i % 20 < 14 THEN 'done' WHEN i % 20 < 16 THEN 'cancelled' WHEN i % 20 = 16 THEN 'active' ELSE 'ready' END AS ph
             FROM generate_series(1, ?) AS i) s`,
      [projectIds, projectIds.length, JOBS],
    );
    await db.raw(
      `INSERT INTO pipeline_runs (id, project_id, pipeline_name, status, manifest_hash, created_at, updated_at, started_at, completed_at)
       SELECT 'prun_bench' || lpad(to_hex(i), 16, '0'), (?::text[])[1 + i % ?], 'pipe' || (i % 5), st, 'bench', c, c, c,
              CASE WHEN st IN ('succeeded', 'failed') THEN c + make_interval(secs => 30 + i % 600) END
       FROM (SELECT i, now() - make_interval(secs => (i::bigint * 7919) % (90 * ${DAY_S})) AS c,
                    CASE WHEN i % 10 < 8 THEN 'succeeded' WHEN i % 10 = 8 THEN 'failed' ELSE 'running' END AS st
             FROM generate_series(1, ?) AS i) s`,
      [projectIds, projectIds.length, RUNS],
    );
    await db.raw('VACUUM ANALYZE jobs');
    await db.raw('VACUUM ANALYZE pipeline_runs');
    await db.raw('VACUUM ANALYZE job_day_counts');
    await db.raw('VACUUM ANALYZE pipeline_run_day_counts');
    const seedSeconds = (Date.now() - seeded) / 1000;

    // The floor on this machine now: an authenticated route that reads one row, measured the same way.
    const floor = await measure(api, `/orgs/${orgId}`);
    const baseline = `Baseline: GET /orgs/{id} (one row), the same ${REQUESTS} requests`;
    rows.push({ scenario: baseline, figure: 'p50', value: fmt.ms(percentile(floor.sorted, 50)) });
    rows.push({ scenario: baseline, figure: 'p99', value: fmt.ms(percentile(floor.sorted, 99)) });

    for (const window of ['7d', '90d'] as const) {
      const scenario = `GET /orgs/{id}/analytics/summary?window=${window}: ${fmt.int(JOBS)} jobs, ${fmt.int(RUNS)} pipeline runs, ${PROJECTS} projects`;
      const { sorted, last } = await measure(api, `/orgs/${orgId}/analytics/summary?window=${window}`);
      rows.push(goalRow(scenario, 'p50', percentile(sorted, 50), fmt.ms, { atMost: GOAL_P99_MS }));
      rows.push(goalRow(scenario, 'p99', percentile(sorted, 99), fmt.ms, { atMost: GOAL_P99_MS }));
      const since = new Date(Date.now() - Number.parseInt(window, 10) * DAY_S * 1000);
      const expected = await db.raw(
        `SELECT (SELECT count(*) FROM jobs WHERE id LIKE 'bench-%' AND created_at >= :since) AS created,
                (SELECT count(*) FROM jobs WHERE id LIKE 'bench-%' AND phase = 'done' AND closed_at >= :since) AS completed,
                (SELECT count(*) FROM pipeline_runs WHERE id LIKE 'prun_bench%' AND created_at >= :since) AS runs,
                (SELECT round(avg(extract(epoch FROM completed_at - started_at)), 3) FROM pipeline_runs
                  WHERE id LIKE 'prun_bench%' AND created_at >= :since AND completed_at IS NOT NULL) AS avg_seconds`,
        { since },
      );
      // The window moved while the requests ran: a few rows at its far edge may have left it.
      const near = (a: number, b: number) => Math.abs(a - b) <= Math.max(5, b * 0.001);
      const created = Number(expected.rows[0].created);
      const runs = Number(expected.rows[0].runs);
      rows.push(checkRow(scenario, 'jobs.created', fmt.int(last.jobs.created), `≈ ${fmt.int(created)}`, near(last.jobs.created, created), failures));
      const completed = Number(expected.rows[0].completed);
      const avgSeconds = Number(expected.rows[0].avg_seconds);
      rows.push(checkRow(scenario, 'jobs.completed', fmt.int(last.jobs.completed), `≈ ${fmt.int(completed)}`, near(last.jobs.completed, completed), failures));
      const avgNear = Math.abs(last.pipelines.avg_duration_seconds - avgSeconds) <= 1;
      rows.push(checkRow(scenario, 'pipelines.avg_duration_seconds', String(last.pipelines.avg_duration_seconds), `≈ ${avgSeconds}`, avgNear, failures));
      rows.push(checkRow(scenario, 'pipelines.runs', fmt.int(last.pipelines.runs), `≈ ${fmt.int(runs)}`, near(last.pipelines.runs, runs), failures));
      rows.push(checkRow(scenario, 'jobs.active', fmt.int(last.jobs.active), fmt.int(JOBS / 20), last.jobs.active === Math.floor(JOBS / 20), failures));
    }
    printTable('svc analytics benchmark', rows, [
      `load average ${loadavg()[0].toFixed(1)} on ${availableParallelism()} cores at the end: the baseline shows what any request costs on this machine now`,
      `seeded with SQL in ${seedSeconds.toFixed(1)} s, then VACUUM ANALYZE; ${REQUESTS} sequential requests per window after ${WARMUP} warm-up ones`,
      "each summary is three statements: the live projects of the org, the job figures and the run figures, each from its daily rollup (kept by triggers) for whole days plus a raw count of the window's partial first day",
      'BENCH_ANALYTICS_JOBS, BENCH_ANALYTICS_RUNS, BENCH_ANALYTICS_PROJECTS, BENCH_ANALYTICS_REQUESTS change the load',
    ]);
  } finally {
    await srv.stop();
  }
  return failures;
}
