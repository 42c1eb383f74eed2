import autocannon from 'autocannon';
import { createKnex } from '../core/db/knex.ts';
import { createLogger } from '../core/logger.ts';
import { startBenchServer, type BenchServer } from './server.ts';
import { ascending, cpuSecondsOf, fmt, goalRow, json, knob, percentile, printTable, seedProject, type Row } from './lib.ts';

/**
 * The hot path against the framework's own limit (issue 23): in one server process, a job read and a
 * job create beside a constant authenticated route and a constant public one, interleaved (every
 * round runs each route once, in turn), so what the machine's other load does falls on all alike.
 * Then the same again with 1,000 more orgs and 100,000 jobs in the database.
 */
const SLICE_S = knob('BENCH_HOT_SECONDS', 5);
const ROUNDS = knob('BENCH_HOT_ROUNDS', 2);
const CONNECTIONS = (process.env.BENCH_HOT_CONNECTIONS ?? '8,32').split(',').map(Number);
const SEED_ORGS = knob('BENCH_HOT_ORGS', 1_000);
const SEED_JOBS = knob('BENCH_HOT_JOBS', 100_000);
const READ_JOBS = 100;
const WARM_UP_S = 2;

const GOALS = { readShare: 0.5, createShare: 0.35, readP99Ms8: 15 };

interface Route {
  name: string;
  method: 'GET' | 'POST';
  /** A function gives each request its own path, where requests should not all name the same thing. */
  path: string | (() => string);
  auth: boolean;
  body?: () => string;
}

interface Slice {
  rate: number;
  p50: number;
  p99: number;
  errors: number;
  /** The server process's CPU time per answered request: what the route costs svc, whatever else the machine runs. */
  cpuMs: number;
}

async function slice(server: BenchServer, token: string, route: Route, connections: number, seconds = SLICE_S): Promise<Slice> {
  const cpuBefore = cpuSecondsOf(server.pid);
  const result = await autocannon({
    url: server.url,
    connections,
    duration: seconds,
    headers: { 'content-type': 'application/json', ...(route.auth ? { authorization: `Bearer ${token}` } : {}) },
    requests: [
      {
        method: route.method,
        path: typeof route.path === 'string' ? route.path : route.path(),
        setupRequest: (req: any) => ({
          ...req,
          ...(route.body ? { body: route.body() } : {}),
          ...(typeof route.path === 'function' ? { path: route.path() } : {}),
        }),
      },
    ],
  });
  const cpuMs = ((cpuSecondsOf(server.pid) - cpuBefore) * 1000) / Math.max(1, result.requests.total);
  return { rate: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.non2xx + result.errors + result.timeouts, cpuMs };
}

/** Each route once per round, in turn; a route's figures are the mean rate, the median p50 and the worst p99 of its slices. */
async function interleaved(server: BenchServer, token: string, routes: Route[], connections: number): Promise<Map<string, Slice>> {
  const slices = new Map<string, Slice[]>(routes.map((r) => [r.name, []]));
  for (let round = 0; round < ROUNDS; round++) for (const r of routes) slices.get(r.name)!.push(await slice(server, token, r, connections));
  return new Map(
    [...slices].map(([name, s]) => [
      name,
      {
        rate: s.reduce((a, x) => a + x.rate, 0) / s.length,
        p50: percentile(ascending(s.map((x) => x.p50)), 50),
        p99: Math.max(...s.map((x) => x.p99)),
        errors: s.reduce((a, x) => a + x.errors, 0),
        cpuMs: s.reduce((a, x) => a + x.cpuMs, 0) / s.length,
      },
    ]),
  );
}

/** 1,000 orgs each with a project and 100 jobs by default, in three INSERT … SELECT statements; the bench user is a member of every org. */
async function seedTenants(databaseUrl: string): Promise<void> {
  const db = createKnex(databaseUrl, 1, createLogger('silent'));
  try {
    const { id: userId } = await db('users').first('id');
    const perOrg = Math.ceil(SEED_JOBS / SEED_ORGS);
    await db.raw(`INSERT INTO orgs (id, name, slug) SELECT 'seed-org-' || i, 'Seed org ' || i, 'seed-org-' || i FROM generate_series(1, ?) i`, [SEED_ORGS]);
    await db.raw(`INSERT INTO org_members (org_id, user_id, role) SELECT 'seed-org-' || i, ?, 'member' FROM generate_series(1, ?) i`, [userId, SEED_ORGS]);
    await db.raw(
      `INSERT INTO projects (id, org_id, name, slug) SELECT 'seed-prj-' || i, 'seed-org-' || i, 'Seed ' || i, 'seed-' || i FROM generate_series(1, ?) i`,
      [SEED_ORGS],
    );
    await db.raw(
      `INSERT INTO jobs (id, project_id, title, description, created_by)
       SELECT 'seed-' || o || '-' || lpad(to_hex(j), 8, '0'), 'seed-prj-' || o, 'seeded job ' || j, 'a seeded job', ?
       FROM generate_series(1, ?) o, generate_series(1, ?) j`,
      [userId, SEED_ORGS, perOrg],
    );
    await db.raw('ANALYZE');
  } finally {
    await db.destroy();
  }
}

function rowsFor(title: string, figures: Map<string, Slice>, routes: Route[], connections: number, failures: string[]): Row[] {
  const bare = figures.get('GET /bench/bare (authenticated, constant)')!;
  const rows: Row[] = [];
  for (const r of routes) {
    const f = figures.get(r.name)!;
    const scenario = `${title}, ${connections} connections`;
    rows.push(
      { scenario, figure: `${r.name}: throughput`, value: fmt.rate(f.rate, 'req/s') },
      { scenario, figure: `${r.name}: latency p50 / p99`, value: `${fmt.ms(f.p50)} / ${fmt.ms(f.p99)}` },
      { scenario, figure: `${r.name}: server CPU per request`, value: fmt.ms(f.cpuMs) },
    );
    if (f.errors) failures.push(`${scenario}: ${r.name}: ${f.errors} non-2xx, errors or timeouts`);
  }
  const read = figures.get(routes[2].name)!;
  const create = figures.get(routes[3].name)!;
  const scenario = `${title}, ${connections} connections`;
  rows.push(
    goalRow(scenario, 'job read ÷ bare authenticated', read.rate / bare.rate, (v) => `${(v * 100).toFixed(0)} %`, { atLeast: GOALS.readShare }),
    goalRow(scenario, 'job create ÷ bare authenticated', create.rate / bare.rate, (v) => `${(v * 100).toFixed(0)} %`, { atLeast: GOALS.createShare }),
    { scenario, figure: 'job read ÷ bare authenticated, by server CPU per request', value: `${((bare.cpuMs / read.cpuMs) * 100).toFixed(0)} %` },
    { scenario, figure: 'job create ÷ bare authenticated, by server CPU per request', value: `${((bare.cpuMs / create.cpuMs) * 100).toFixed(0)} %` },
    { scenario, figure: 'bare authenticated ÷ public', value: `${((bare.rate / figures.get(routes[0].name)!.rate) * 100).toFixed(0)} %` },
  );
  if (connections === 8) rows.push(goalRow(scenario, 'job read p99', read.p99, fmt.ms, { atMost: GOALS.readP99Ms8 }));
  return rows;
}

/** A project with jobs to read on a fresh server, and the routes the bench measures there: the caller's token and the routes. */
async function seededRoutes(url: string): Promise<{ token: string; routes: Route[] }> {
  const { token, projectId } = await seedProject(url);
  // Reads go round a hundred jobs, so no cache or coalescing of one row can stand in for reading.
  const readIds: string[] = [];
  for (let i = 0; i < READ_JOBS; i++)
    readIds.push((await json(`${url}/projects/${projectId}/jobs`, 'POST', { description: `a job the bench reads #${i}` }, token)).id);
  let n = 0;
  let r = 0;
  const routes: Route[] = [
    { name: 'GET /bench/public (constant)', method: 'GET', path: '/bench/public', auth: false },
    { name: 'GET /bench/bare (authenticated, constant)', method: 'GET', path: '/bench/bare', auth: true },
    { name: 'GET /jobs/{id}', method: 'GET', path: () => `/jobs/${readIds[r++ % READ_JOBS]}`, auth: true },
    {
      name: 'POST /projects/{id}/jobs',
      method: 'POST',
      path: `/projects/${projectId}/jobs`,
      auth: true,
      body: () => JSON.stringify({ description: `Fix the flaky retry test #${n++}`, labels: ['ci'], priority: n % 5 }),
    },
  ];
  return { token, routes };
}

/** The request limiter's settings when it is on: the default leases (batch 10 growing to 50), a bucket refilled faster than the bench can empty it. */
const LIMITER_ON = {
  SVC_LIMITS__REQUESTS__ENABLED: 'true',
  SVC_LIMITS__REQUESTS__PER_SECOND: '1000000000',
  // The default burst: leases grow to its tenth (50), as a busy caller's would.
  SVC_LIMITS__REQUESTS__BURST: '500',
};
const LIMITER_GOAL = 0.95;

/**
 * The request limiter's price (issue 29 item 6): two servers, limiter off and on (limits.requests.enabled),
 * each route measured on both in turn, the order swapped every round. On, every request spends a
 * leased token and a busy caller leases 50 at a time (one UPDATE … RETURNING, the default max
 * lease); the bucket refills at once, so nothing is refused and the figure is the cost alone.
 */
async function runLimiterComparison(failures: string[]): Promise<void> {
  const off = await startBenchServer({ SVC_SERVER__BENCH_ROUTES: 'true' });
  const on = await startBenchServer({ SVC_SERVER__BENCH_ROUTES: 'true', ...LIMITER_ON });
  try {
    const sides = await Promise.all(
      [off, on].map(async (server) => {
        const { token, routes } = await seededRoutes(server.url);
        // The public route takes no token, so the limiter's cost is not in it.
        return { server, token, routes: routes.filter((route) => route.auth) };
      }),
    );
    for (const side of sides) for (const route of side.routes) await slice(side.server, side.token, route, CONNECTIONS[0], WARM_UP_S);
    const rows: Row[] = [];
    for (const c of CONNECTIONS) {
      const figures = sides.map(() => new Map<string, Slice[]>());
      for (let round = 0; round < ROUNDS; round++)
        for (let i = 0; i < sides[0].routes.length; i++)
          for (const k of round % 2 ? [1, 0] : [0, 1]) {
            const side = sides[k];
            const route = side.routes[i];
            const list = figures[k].get(route.name) ?? [];
            list.push(await slice(side.server, side.token, route, c));
            figures[k].set(route.name, list);
          }
      const scenario = `limiter off vs on, ${c} connections`;
      for (const route of sides[0].routes) {
        const [a, b] = figures.map((f) => f.get(route.name)!);
        const mean = (s: Slice[], f: (x: Slice) => number) => s.reduce((t, x) => t + f(x), 0) / s.length;
        const errors = [...a, ...b].reduce((t, x) => t + x.errors, 0);
        if (errors) failures.push(`${scenario}: ${route.name}: ${errors} non-2xx, errors or timeouts`);
        rows.push(
          {
            scenario,
            figure: `${route.name}: throughput off / on`,
            value: `${fmt.rate(
              mean(a, (x) => x.rate),
              'req/s',
            )} / ${fmt.rate(
              mean(b, (x) => x.rate),
              'req/s',
            )}`,
          },
          {
            scenario,
            figure: `${route.name}: server CPU per request off / on`,
            value: `${fmt.ms(mean(a, (x) => x.cpuMs))} / ${fmt.ms(mean(b, (x) => x.cpuMs))}`,
          },
          goalRow(scenario, `${route.name}: throughput on ÷ off`, mean(b, (x) => x.rate) / mean(a, (x) => x.rate), (v) => `${(v * 100).toFixed(1)} %`, {
            atLeast: LIMITER_GOAL,
          }),
          {
            scenario,
            figure: `${route.name}: by server CPU per request, off ÷ on`,
            value: `${((mean(a, (x) => x.cpuMs) / mean(b, (x) => x.cpuMs)) * 100).toFixed(1)} %`,
          },
        );
      }
    }
    printTable(
      `svc request limiter: its cost on the hot routes, two server processes (limiter off, on), ${ROUNDS} rounds of ${SLICE_S} s per route and side`,
      rows,
      [
        'on: limits.requests.enabled with the default burst 500 and batch 10 (leases grow to 50, one UPDATE … RETURNING each) and per_second 10⁹, so nothing is refused; off: limits.requests.enabled false',
        'every round measures each route on both servers one after the other, the order swapped each round; figures are means over the rounds',
        'goal: on at most 5 % slower than off (throughput on ÷ off ≥ 95 %)',
      ],
    );
  } finally {
    await Promise.all([off.stop(), on.stop()]);
  }
}

/** Returns the failed checks (a route answering anything but 2xx). BENCH_HOT_PARTS=limiter runs only the limiter comparison, =main only the rest. */
export async function runHotBench(): Promise<string[]> {
  const failures: string[] = [];
  const parts = (process.env.BENCH_HOT_PARTS ?? 'main,limiter').split(',');
  if (parts.includes('limiter')) await runLimiterComparison(failures);
  if (!parts.includes('main')) return failures;
  const server = await startBenchServer({ SVC_SERVER__BENCH_ROUTES: 'true' });
  try {
    const { token, routes } = await seededRoutes(server.url);
    // Every route once before measuring, so no figure carries the JIT's first compilations or a cold memo.
    for (const r of routes) await slice(server, token, r, CONNECTIONS[0], WARM_UP_S);
    const rows: Row[] = [];
    for (const c of CONNECTIONS) rows.push(...rowsFor('Fresh database', await interleaved(server, token, routes, c), routes, c, failures));
    const seeding = performance.now();
    await seedTenants(server.databaseUrl);
    const seeded = `With ${fmt.int(SEED_ORGS)} orgs and ${fmt.int(SEED_JOBS)} jobs more (seeded in ${fmt.s((performance.now() - seeding) / 1000)})`;
    for (const c of CONNECTIONS) rows.push(...rowsFor(seeded, await interleaved(server, token, routes, c), routes, c, failures));
    printTable(`svc hot path benchmark: one server process (api role), ${ROUNDS} interleaved rounds of ${SLICE_S} s per route`, rows, [
      'each route is warmed up for 2 s first (not counted); every round runs the four routes one after another; throughput is the mean of a route’s slices, p50 their median, p99 the worst slice’s p99',
      'bare authenticated: GET /bench/bare, the same bearer scheme as the API and a constant body (server.bench_routes, off by default); public: the same without authentication',
      'the caller is the bench’s admin (bootstrap); with the seed it is also a member of every seeded org',
      'server CPU per request: the svc process’s user + system CPU time over a slice ÷ the requests answered in it (/proc); a ratio by CPU is bare’s CPU per request ÷ the route’s, what the throughput ratio would be were svc’s CPU the only limit',
      'the load generator (this process), the server and PostgreSQL share the machine’s cores: compare ratios within a run, not absolute figures across runs',
    ]);
  } finally {
    await server.stop();
  }
  return failures;
}
