import test from 'ava';
import { startPgCluster, type PgCluster } from '../support/pg-cluster.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { Client, ExecutionLog, REPORTS_TO_HOST, bootstrap, scriptJobs, settled, sleep, tail, until } from '../support/chaos.ts';

/**
 * Two servers with every role on one database (two orchestrators, two workers) take the same
 * backlog: no job runs twice and no two holders of a gate run at once (each execution's first and
 * last tick bound it), also when one of them is SIGKILLed while holding the gate and started again.
 */
const ENV = { SVC_ROLES: 'api,orchestrator,worker', SVC_WORKER__CONCURRENCY: '4', ...REPORTS_TO_HOST };
const GATE = { gates: ['deploy:prod'], max_attempts: 3 };
let cluster: PgCluster;
let servers: ServerProcess[] = [];
let client: Client;
let projectId: string;
const runs = new ExecutionLog();

test.before(async () => {
  cluster = await startPgCluster();
  servers = await Promise.all([startServerProcess(cluster.url, ENV), startServerProcess(cluster.url, ENV)]);
  const boot = await bootstrap(servers[0].url);
  client = new Client(() => servers[0].url, boot.client.token);
  projectId = boot.projectId;
});

test.after.always(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await cluster?.destroy();
  runs.remove();
});

/** Pairs of executions of gate jobs whose lifetimes overlap. */
function gateOverlaps(gateJobs: Set<string>): string[] {
  const held = runs.executions().filter((r) => gateJobs.has(r.job));
  const overlaps: string[] = [];
  for (const a of held) for (const b of held) if (a !== b && a.from < b.from && b.from <= a.to) overlaps.push(`${a.job}/${a.pid} ↔ ${b.job}/${b.pid}`);
  return overlaps;
}

test.serial('two orchestrators: 0 double runs, 0 gate overlaps', async (t) => {
  const gated = await scriptJobs(client, projectId, 5, runs.run(1), GATE);
  const plain = await scriptJobs(client, projectId, 12, runs.run(1));
  const { done } = await settled(client, projectId, [...gated, ...plain], 120_000);
  const starts = runs.starts();
  const doubles = [...gated, ...plain].filter((job) => starts.get(job) !== 1);
  const overlaps = gateOverlaps(new Set(gated));
  t.log(`jobs ${gated.length + plain.length} (${gated.length} under one gate), done ${done}; double runs ${doubles.length}; gate overlaps ${overlaps.length}`);
  t.is(done, gated.length + plain.length, servers.map(tail).join('\n'));
  t.deepEqual(doubles, [], 'every job ran exactly once');
  t.deepEqual(overlaps, [], 'one holder of the gate at a time');
});

test.serial('two orchestrators across a crash: the gate holder SIGKILLed and restarted, still 0 overlaps', async (t) => {
  const gated = await scriptJobs(client, projectId, 4, runs.run(3), GATE);
  const gateJobs = new Set(gated);
  // Whichever server holds the gate: kill both in turn until the running holder's server is gone.
  const holder = await until(async () => runs.executions().find((r) => gateJobs.has(r.job) && !r.ended), 'a gate holder to run', 30_000);
  const attempt = (await client.call('GET', `/projects/${projectId}/jobs/${holder.job}/attempts`)).body.data.at(-1);
  const owner = servers.findIndex((s) => String(attempt.lease_owner).includes(`:${s.child.pid}:`));
  t.true(owner >= 0, `the lease owner ${attempt.lease_owner} names one of the servers`);
  servers[owner].child.kill('SIGKILL');
  await servers[owner].exited;
  const survivor = servers[1 - owner];
  client = new Client(() => survivor.url, client.token);
  await sleep(300);
  servers[owner] = await startServerProcess(cluster.url, ENV);
  const { done } = await settled(client, projectId, gated, 180_000);
  const starts = runs.starts();
  const duplicates = gated.map((job) => (starts.get(job) ?? 0) - 1);
  const overlaps = gateOverlaps(gateJobs);
  t.log(
    `gate jobs ${gated.length}, done ${done}; executions beyond one per job ${JSON.stringify(duplicates)} (the killed holder: ${holder.job}); gate overlaps ${overlaps.length}`,
  );
  t.is(done, gated.length, servers.map(tail).join('\n'));
  t.deepEqual(overlaps, [], 'the retry under the gate started only after the killed holder was dead');
  t.true(
    duplicates.every((d, i) => d === 0 || (d === 1 && gated[i] === holder.job)),
    'only the killed holder ran again, once',
  );
});
