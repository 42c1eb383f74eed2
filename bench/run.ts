/**
 * `npm run bench` runs every group: kernel (bench/kernel.ts), then jobs (bench/jobs.ts).
 * `npm run bench -- kernel` or `-- jobs` runs one group; `-- claim`, `-- dispatch`, `-- ingest`
 * pick scenarios of the jobs group. Each prints a table with the goal beside each figure and
 * checks what the load wrote; a failed check exits 1 (a missed goal does not).
 *
 * The database: a fresh one from the test helper (beside DATABASE_URL when set, else an embedded
 * PostgreSQL), dropped at the end. Knobs (environment):
 *   BENCH_DURATION=10, BENCH_CONNECTIONS=16        autocannon scenarios (kernel, jobs ingest)
 *   BENCH_CLAIM_JOBS=20000, BENCH_CLAIMERS=8       claim backlog and claimers
 *   BENCH_CLAIM_RUNS=process:1,process:32,inproc:32  claimer placement and claimNext batch per run
 *   BENCH_CLAIM_SECONDS=12                         time limit of each claim run
 *   BENCH_DISPATCH_JOBS=500, BENCH_DISPATCH_EVERY_MS=20  dispatch latency
 */
const GROUPS = ['kernel', 'jobs'] as const;
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
  else failures.push(...(await (await import('./jobs.ts')).runJobsBench(scenarios.length ? scenarios : [...JOB_SCENARIOS])));
}
console.log(`\nbenchmark finished in ${((Date.now() - started) / 1000).toFixed(0)} s`);
if (failures.length) console.error(`\n${failures.length} correctness check(s) failed:\n  ${failures.join('\n  ')}`);
// Everything is stopped and dropped by now, but Agenda (the orchestrator's scheduler) leaves a
// lock-lifetime timer running after stop() that would hold the process for about a minute.
process.exit(failures.length ? 1 : 0);
