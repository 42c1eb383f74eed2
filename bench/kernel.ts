import autocannon from 'autocannon';
import { startBenchServer } from './server.ts';
import { checkRow, cpuMeter, fmt, pgWaits, printTable, seedProject, type Row } from './lib.ts';

const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);

interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  body?: () => string;
}

async function measure(url: string, databaseUrl: string, token: string, s: Scenario, failures: string[]): Promise<Row[]> {
  const waits = await pgWaits(databaseUrl);
  const cpu = cpuMeter();
  const result = await autocannon({
    url: url + s.path,
    connections: CONNECTIONS,
    duration: DURATION_S,
    method: s.method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    requests: [{ method: s.method, path: s.path, setupRequest: (req: any) => (s.body ? { ...req, body: s.body() } : req) }],
  });
  const cpuUse = cpu.stop();
  const waited = await waits.stop();
  const errors = result.non2xx + result.errors + result.timeouts;
  return [
    { scenario: s.name, figure: 'throughput', value: fmt.rate(result.requests.average, 'req/s'), goal: 'none set' },
    { scenario: s.name, figure: 'latency p50', value: fmt.ms(result.latency.p50), goal: 'none set' },
    { scenario: s.name, figure: 'latency p99', value: fmt.ms(result.latency.p99), goal: 'none set' },
    { scenario: s.name, figure: 'CPU cores: machine = Node + PG + others', value: cpuUse },
    { scenario: s.name, figure: 'PostgreSQL backends on CPU / waiting', value: waited },
    checkRow(s.name, 'non-2xx + errors + timeouts', `${fmt.int(errors)} of ${fmt.int(result.requests.total)}`, '0', errors === 0, failures),
  ];
}

/** The kernel's HTTP scenarios (issue 2): org ensure writes and authenticated project reads. Returns the failed checks. */
export async function runKernelBench(): Promise<string[]> {
  const failures: string[] = [];
  const server = await startBenchServer();
  try {
    const { token, projectId } = await seedProject(server.url);
    let n = 0;
    const scenarios: Scenario[] = [
      { name: 'POST /orgs/ensure (create)', method: 'POST', path: '/orgs/ensure', body: () => JSON.stringify({ name: `bench org ${process.pid}-${n++}` }) },
      { name: 'POST /orgs/ensure (identical)', method: 'POST', path: '/orgs/ensure', body: () => JSON.stringify({ name: 'Bench' }) },
      { name: 'GET /projects/{id}', method: 'GET', path: `/projects/${projectId}` },
      { name: 'GET /projects (list)', method: 'GET', path: '/projects?limit=10' },
    ];
    const rows: Row[] = [];
    for (const s of scenarios) rows.push(...(await measure(server.url, server.databaseUrl, token, s, failures)));
    printTable(`svc kernel benchmark: autocannon, ${CONNECTIONS} connections, ${DURATION_S} s per scenario, server in its own process (api role)`, rows, [
      'latency: autocannon request latency (send → full response), over every request of the scenario',
      'CPU cores, averaged over the run: machine (/proc/stat) = this benchmark’s Node processes (autocannon here, the svc server) + its embedded PostgreSQL + others (everything else on the machine)',
      'PostgreSQL backends: share of pg_stat_activity samples (every 25 ms) of the server database’s active backends by wait event (CPU: no wait)',
      'the load generator (this process) and the server share the machine’s cores',
    ]);
  } finally {
    await server.stop();
  }
  return failures;
}
