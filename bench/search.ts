import { ascending, checkRow, fmt, goalRow, kernelWithProject, knob, percentile, printTable, type Row } from './lib.ts';

const JOBS = knob('BENCH_SEARCH_JOBS', 100_000);
const REQUESTS = knob('BENCH_SEARCH_REQUESTS', 300);
const WARMUP = 20;
const GOAL_P99_MS = 50;
const WORDS = ['login', 'redirect', 'cache', 'timeout', 'refactor', 'billing', 'upload', 'parser', 'retry', 'webhook', 'schema', 'flaky'];
const HARNESSES = ['harness_a', 'harness_b', 'harness_c', 'harness_d', 'harness_e', 'harness_f'];

/**
 * `npm run bench -- search`: the console's job list, searched on the server (GET /projects/{id}/jobs
 * with q, harness, model, label, phase and dates), over one project holding JOBS jobs seeded with SQL.
 * Sequential requests through hapi's inject (as the console's calls reach the routes), p50 and p99 per
 * query and over all of them; the goal is p99 ≤ 50 ms with 100,000 jobs.
 */
export async function runSearchBench(): Promise<string[]> {
  const failures: string[] = [];
  const rows: Row[] = [];
  const { srv, api, projectId } = await kernelWithProject(['api']);
  try {
    const db = srv.kernel.db;
    const seeded = Date.now();
    // Two words of WORDS per title, one in the description; phases, harnesses, models, labels and 90 days of creation times spread evenly.
    await db.raw(
      `INSERT INTO jobs (id, project_id, title, description, phase, labels, harness, created_at, updated_at, closed_at)
       SELECT 'bench-' || lpad(to_hex(i), 8, '0'), ?, 'job ' || i || ' ' || (?::text[])[1 + i % 12] || ' ' || (?::text[])[1 + (i / 12) % 12],
              'about the ' || (?::text[])[1 + (i / 144) % 12] || ' code',
              ph, ARRAY['team-' || (i % 20)], jsonb_build_object('harness', (?::text[])[1 + i % 6], 'model', 'model-' || (i % 30)),
              c, c, CASE WHEN ph = 'done' THEN c + interval '1 hour' END
         FROM (SELECT i, now() - make_interval(secs => (i * 7919) % (90 * 86400)) AS c,
                      (ARRAY['done','done','done','ready','backlog','active','review','cancelled'])[1 + i % 8] AS ph
                 FROM generate_series(1, ?) AS i) s`,
      [projectId, WORDS, WORDS, WORDS, HARNESSES, JOBS],
    );
    await db.raw('VACUUM ANALYZE jobs');
    const seedS = (Date.now() - seeded) / 1000;
    const since = new Date(Date.now() - 7 * 86_400_000).toISOString();
    const queries: [string, string][] = [
      ['newest page, no filter', ''],
      ['one word', 'q=login'],
      ['two words', 'q=cache%20timeout'],
      ['word prefix + harness', 'q=refac&harness=harness_b'],
      ['model + phase', 'model=model-7&phase=done'],
      ['label + last 7 days', `label=team-3&created_after=${since}`],
      ['word + closed last 7 days', `q=webhook&closed_after=${since}`],
      ['a word nothing has', 'q=zebra'],
    ];
    const all: number[] = [];
    for (const [name, query] of queries) {
      const path = `/projects/${projectId}/jobs?limit=50${query ? `&${query}` : ''}`;
      for (let i = 0; i < WARMUP; i++) await api.get(path);
      const latencies: number[] = [];
      let total = 0;
      for (let i = 0; i < REQUESTS; i++) {
        const at = performance.now();
        const res = await api.get(path);
        latencies.push(performance.now() - at);
        if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${JSON.stringify(res.body)}`);
        total = res.body.pagination.total;
      }
      all.push(...latencies);
      const sorted = ascending(latencies);
      rows.push({ scenario: name, figure: 'p50 / p99 (matches)', value: `${fmt.ms(percentile(sorted, 50))} / ${fmt.ms(percentile(sorted, 99))} (${total})` });
      if (name === 'a word nothing has') rows.push(checkRow(name, 'matches', String(total), '0', total === 0, failures));
      if (name === 'newest page, no filter') rows.push(checkRow(name, 'matches', String(total), String(JOBS), total === JOBS, failures));
    }
    const sorted = ascending(all);
    rows.push({ scenario: 'all queries', figure: 'p50', value: fmt.ms(percentile(sorted, 50)) });
    rows.push(goalRow('all queries', 'p99', percentile(sorted, 99), (v) => fmt.ms(v), { atMost: GOAL_P99_MS }));
    printTable('svc job search benchmark', rows, [
      `one project of ${JOBS.toLocaleString('en')} jobs seeded with SQL in ${seedS.toFixed(1)} s (titles and descriptions from ${WORDS.length} words, six harnesses, 30 models, 20 labels, 90 days)`,
      `${REQUESTS} sequential requests per query after ${WARMUP} warm-up, 50 jobs a page, with the page's total, through hapi's inject`,
      'knobs BENCH_SEARCH_JOBS, BENCH_SEARCH_REQUESTS',
    ]);
  } finally {
    await srv.stop();
  }
  return failures;
}
