/**
 * `npm run bench` runs every group: kernel (bench/kernel.ts), hot (bench/hot.ts), jobs (bench/jobs.ts), then pipelines
 * (bench/pipelines.ts). `npm run bench -- kernel`, `-- jobs` or `-- pipelines` runs one group;
 * `-- claim`, `-- dispatch`, `-- ingest` pick scenarios of the jobs group. Each prints a table with
 * the goal beside each figure and checks what the load wrote; a failed check exits 1 (a missed goal
 * does not).
 *
 * The database: a fresh one from the test helper (beside DATABASE_URL when set, else an embedded
 * PostgreSQL), dropped at the end. Knobs (environment):
 *   BENCH_DURATION=10, BENCH_CONNECTIONS=16        autocannon scenarios (kernel, jobs ingest)
 *   BENCH_CLAIM_JOBS=20000, BENCH_CLAIMERS=8       claim backlog and claimers
 *   BENCH_CLAIM_RUNS=process:1,process:32,inproc:32  claimer placement and claimNext batch per run
 *   BENCH_CLAIM_SECONDS=12                         time limit of each claim run
 *   BENCH_DISPATCH_JOBS=500, BENCH_DISPATCH_EVERY_MS=20  dispatch latency
 *   BENCH_PIPELINE_RUNS=100, BENCH_PIPELINE_STEPS=10  pipelines: linear runs per pass, steps per run
 *   BENCH_PIPELINE_CONCURRENCY=1,<runs>             pipelines: one pass per entry, at most that many runs unfinished at once
 *   BENCH_EVENTS=500, BENCH_EVENT_CONCURRENCY=1,16, BENCH_EVENT_BACKLOG=1000  events (bench/events.ts): events per pass, POSTs in flight per pass, events committed at once
 *   BENCH_WEBHOOK_EVENTS=5000, BENCH_WEBHOOK_SUBSCRIPTIONS=1  webhooks (bench/webhooks.ts): events, subscriptions they fan out to
 *   BENCH_WORKER_JOBS=200, BENCH_WORKER_CONCURRENCY=4  worker (bench/worker.ts): script jobs per scenario, worker.concurrency
 *   BENCH_WORKER_PARTS=small,large, BENCH_LARGE_FILES=20000, BENCH_LARGE_MB=300, BENCH_LARGE_WARM=10  worker: its parts; the large repository's size, warm jobs
 *   BENCH_HOT_SECONDS=5, BENCH_HOT_ROUNDS=2, BENCH_HOT_CONNECTIONS=8,32  hot (bench/hot.ts): slice per route, interleaved rounds
 *   BENCH_HOT_ORGS=1000, BENCH_HOT_JOBS=100000     hot: the seed of its second half
 *   BENCH_HOT_PARTS=main,limiter                    hot: its parts (limiter: the request limiter off vs on, bench/hot.ts)
 *   BENCH_SERVER_NODE_ARGS=''                      node flags of the spawned server (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof)
 *   BENCH_CLI_RUNS=30                               cli (bench/cli.ts): runs of each command
 *   BENCH_STREAMS=1000, BENCH_STREAM_CREATES=200    streams (bench/streams.ts): idle SSE streams, job creates measured
 *   BENCH_ANALYTICS_JOBS=100000, BENCH_ANALYTICS_RUNS=10000  analytics (bench/analytics.ts): seeded jobs and pipeline runs of one org
 *   BENCH_BUILD_RUNS=5                              builds (bench/builds.ts): builds per scenario (needs a Docker engine)
 *   BENCH_INFERENCE_CALLS=300, BENCH_INFERENCE_TOKENS=5000  inference (bench/inference.ts): streamed calls per side, tokens of the long stream
 *   BENCH_SEARCH_JOBS=100000, BENCH_SEARCH_REQUESTS=300  search (bench/search.ts): jobs in the searched project, requests per query
 * `npm run bench` builds first: the server and the CLI run compiled, as users run them.
 */
const GROUPS = ['kernel', 'hot', 'jobs', 'pipelines', 'events', 'webhooks', 'worker', 'cli', 'streams', 'analytics', 'builds', 'inference', 'search'] as const;
const JOB_SCENARIOS = ['claim', 'dispatch', 'ingest'] as const;

const args = process.argv.slice(2);
const unknown = args.filter((a) => !(GROUPS as readonly string[]).includes(a) && !(JOB_SCENARIOS as readonly string[]).includes(a));
if (unknown.length) {
  console.error(`unknown benchmark ${unknown.join(', ')}: choose from ${[...GROUPS, ...JOB_SCENARIOS].join(', ')}`);
  process.exit(2);
}
const scenarios = JOB_SCENARIOS.filter((s) => args.includes(s));
const groups = GROUPS.filter((g) => args.length === 0 || args.includes(g) || (g === 'jobs' && scenarios.length > 0));

const started = Date.now();
const failures: string[] = [];
for (const group of groups) {
  if (group === 'kernel') failures.push(...(await (await import('./kernel.ts')).runKernelBench()));
  else if (group === 'hot') failures.push(...(await (await import('./hot.ts')).runHotBench()));
  else if (group === 'jobs') failures.push(...(await (await import('./jobs.ts')).runJobsBench(scenarios.length ? scenarios : [...JOB_SCENARIOS])));
  else if (group === 'pipelines') failures.push(...(await (await import('./pipelines.ts')).runPipelinesBench()));
  else if (group === 'events') failures.push(...(await (await import('./events.ts')).runEventsBench()));
  else if (group === 'worker') failures.push(...(await (await import('./worker.ts')).runWorkerBench()));
  else if (group === 'cli') failures.push(...(await (await import('./cli.ts')).runCliBench()));
  else if (group === 'streams') failures.push(...(await (await import('./streams.ts')).runStreamsBench()));
  else if (group === 'analytics') failures.push(...(await (await import('./analytics.ts')).runAnalyticsBench()));
  else if (group === 'builds') failures.push(...(await (await import('./builds.ts')).runBuildsBench()));
  else if (group === 'inference') failures.push(...(await (await import('./inference.ts')).runInferenceBench()));
  else if (group === 'search') failures.push(...(await (await import('./search.ts')).runSearchBench()));
  else failures.push(...(await (await import('./webhooks.ts')).runWebhooksBench()));
}
console.log(`\nbenchmark finished in ${((Date.now() - started) / 1000).toFixed(0)} s`);
if (failures.length) console.error(`\n${failures.length} correctness check(s) failed:\n  ${failures.join('\n  ')}`);
// Everything is stopped and dropped by now, but Agenda (the orchestrator's scheduler) leaves a
// lock-lifetime timer running after stop() that would hold the process for about a minute.
process.exit(failures.length ? 1 : 0);
