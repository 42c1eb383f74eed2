import test from 'ava';
import { startPgCluster, type PgCluster } from '../support/pg-cluster.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { Client, ExecutionLog, REPORTS_TO_HOST, bootstrap, scriptJobs, settled, sleep, tail, until } from '../support/chaos.ts';

/**
 * SIGKILL of the whole server (every role) while script jobs run, three times, each time started
 * again at once as a supervisor would: no job is lost; a job runs once, plus at most once more per
 * lease a kill ended (caught mid-run, or after its script ended but before its completion was
 * recorded), never two executions at once; and every stranded job runs again within 30 s of the
 * restart (default lease 30 s, heartbeat 10 s). The attempt processes die with the server (the
 * keeper), so a killed execution never reaches its end.
 */
const ENV = { SVC_ROLES: 'api,orchestrator,worker', SVC_WORKER__CONCURRENCY: '6', ...REPORTS_TO_HOST };
let cluster: PgCluster;
let server: ServerProcess;
let client: Client;
let projectId: string;
const runs = new ExecutionLog();

test.before(async () => {
  cluster = await startPgCluster();
  server = await startServerProcess(cluster.url, ENV);
  const boot = await bootstrap(server.url);
  client = new Client(() => server.url, boot.client.token);
  projectId = boot.projectId;
});

test.after.always(async () => {
  await server?.stop();
  await cluster?.destroy();
  runs.remove();
});

test.serial('three SIGKILLs of the server mid-run: 0 lost, ≤ 1 duplicate per killed lease, stranded jobs running again within 30 s', async (t) => {
  const all: string[] = [];
  /** Per job, how many of its executions the kills caught (a rerun can be caught by the next round's kill too). */
  const stranded = new Map<string, number>();
  const killed = new Set<string>();
  const recoveries: number[] = [];
  for (let round = 1; round <= 3; round++) {
    const ids = await scriptJobs(client, projectId, 6, runs.run(4), { max_attempts: 3 });
    all.push(...ids);
    // Wait until some of this round's jobs are running, then kill the server without warning.
    await until(async () => runs.executions().filter((r) => ids.includes(r.job) && !r.ended).length >= 3, 'executions to start', 30_000);
    server.child.kill('SIGKILL');
    await server.exited;
    await sleep(300); // the keeper ends the attempt processes
    // A killed execution never ends: each is counted once, by the kill that caught it.
    const caught = runs.executions().filter((r) => !r.ended && !killed.has(`${r.job}:${r.pid}`));
    for (const r of caught) killed.add(`${r.job}:${r.pid}`);
    for (const r of caught) stranded.set(r.job, (stranded.get(r.job) ?? 0) + 1);
    const before = new Map(caught.map((r) => [r.job, runs.starts().get(r.job) ?? 0]));
    const restartedAt = Date.now();
    server = await startServerProcess(cluster.url, ENV);
    const upAt = Date.now();
    const upAfter = (upAt - restartedAt) / 1000;
    await until(async () => [...before].every(([job, n]) => (runs.starts().get(job) ?? 0) > n), 'every stranded job to run again', 60_000).catch(
      async (err) => {
        const states = await Promise.all([...before.keys()].map(async (job) => (await client.call('GET', `/projects/${projectId}/jobs/${job}/attempts`)).body));
        throw new Error(`${err.message}: ${JSON.stringify(states).slice(0, 3000)}\n${tail(server)}`);
      },
    );
    const seconds = (Date.now() - upAt) / 1000;
    recoveries.push(seconds);
    t.log(
      `round ${round}: ${caught.length} executions caught by the kill; the new process answered /health ${upAfter.toFixed(1)} s after it was started, and every stranded job ran again ${seconds.toFixed(1)} s after that`,
    );
  }
  const { done, attempts } = await settled(client, projectId, all, 120_000);
  const starts = runs.starts();
  const lost = all.length - done;
  // Every lease a kill ended is on record as an attempt lost with its worker: the executions the
  // kills caught mid-run, and those whose script had ended before the kill recorded its completion
  // (the job runs again for those too). Beyond its first, each execution of a job must answer to one.
  const lostAttempts = new Map<string, number>();
  for (const job of all) {
    const list: { error: string | null }[] = (await client.call('GET', `/projects/${projectId}/jobs/${job}/attempts?limit=100`)).body.data;
    lostAttempts.set(job, list.filter((a) => a.error?.startsWith('worker lost')).length);
  }
  const beyond = all
    .map((job) => ({ job, extra: (starts.get(job) ?? 0) - 1 - (lostAttempts.get(job) ?? 0), kills: stranded.get(job) ?? 0, lost: lostAttempts.get(job) ?? 0 }))
    .filter((j) => j.extra > 0 || j.kills > j.lost || (starts.get(j.job) ?? 0) < 1);
  const overlapping = all.filter((job) => {
    const list = runs
      .executions()
      .filter((r) => r.job === job)
      .sort((a, b) => a.from - b.from);
    return list.some((r, i) => i > 0 && r.from <= list[i - 1].to);
  });
  const unfinished = all.filter((job) => !runs.executions().some((r) => r.job === job && r.ended));
  const duplicates = [...stranded].map(([job, kills]) => (starts.get(job) ?? 0) - kills);
  t.log(
    `jobs ${all.length}, done ${done}, lost ${lost}; killed leases ${[...stranded.values()].reduce((a, b) => a + b, 0)} of ${stranded.size} jobs caught mid-run, ` +
      `executions beyond one per caught lease ${JSON.stringify(duplicates)}, attempts lost with their worker ${[...lostAttempts.values()].reduce((a, b) => a + b, 0)}; ` +
      `recovery ${recoveries.map((s) => s.toFixed(1)).join(' / ')} s after the restarted process was up; attempts per job max ${Math.max(...attempts.values())}`,
  );
  t.is(lost, 0, tail(server));
  t.true(stranded.size > 0, 'the kills caught running executions');
  t.deepEqual(beyond, [], 'each job ran once, plus once per attempt lost with its worker, and every caught execution is such an attempt');
  t.deepEqual(overlapping, [], 'no two executions of one job overlap');
  t.deepEqual(unfinished, [], 'every job ran to its end once');
  t.true(
    recoveries.every((s) => s <= 30),
    `every stranded job running again within 30 s of the restarted process answering: ${recoveries.join(', ')}`,
  );
});
