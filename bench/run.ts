import autocannon from 'autocannon';
import { startBenchServer } from './server.ts';

const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);

interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  body?: () => string;
}

async function json(url: string, method: string, body?: unknown, token?: string): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function measure(url: string, token: string, s: Scenario) {
  const result = await autocannon({
    url: url + s.path,
    connections: CONNECTIONS,
    duration: DURATION_S,
    method: s.method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    requests: [{ method: s.method, path: s.path, setupRequest: (req: any) => (s.body ? { ...req, body: s.body() } : req) }],
  });
  const ok = result['2xx'];
  return {
    scenario: s.name,
    'req/s': Math.round(result.requests.average),
    'p50 ms': result.latency.p50,
    'p99 ms': result.latency.p99,
    ok,
    errors: result.non2xx + result.errors + result.timeouts,
  };
}

const server = await startBenchServer();
try {
  const admin = await json(`${server.url}/auth/bootstrap`, 'POST', { email: 'bench@example.com' });
  const token = admin.access_token;
  const org = await json(`${server.url}/orgs`, 'POST', { name: 'Bench' }, token);
  const project = await json(`${server.url}/projects`, 'POST', { org_id: org.id, name: 'Bench', slug: 'bench' }, token);
  let n = 0;
  const scenarios: Scenario[] = [
    { name: 'POST /orgs/ensure (create)', method: 'POST', path: '/orgs/ensure', body: () => JSON.stringify({ name: `bench org ${process.pid}-${n++}` }) },
    { name: 'POST /orgs/ensure (identical)', method: 'POST', path: '/orgs/ensure', body: () => JSON.stringify({ name: 'Bench' }) },
    { name: 'GET /projects/{id}', method: 'GET', path: `/projects/${project.id}` },
    { name: 'GET /projects (list)', method: 'GET', path: '/projects?limit=10' },
  ];
  const rows = [];
  for (const s of scenarios) rows.push(await measure(server.url, token, s));
  console.log(`\nsvc kernel benchmark: ${CONNECTIONS} connections, ${DURATION_S} s per scenario, server in its own process (api role)\n`);
  console.table(rows);
} finally {
  await server.stop();
}
