// The analytics figures come from daily rollups kept by triggers (025_analytics_rollups). They must
// equal direct counts over jobs and pipeline_runs for every window, whatever happened to the rows:
// jobs created, completed and failed through the API, rows dated across UTC day boundaries and on
// the window's edge, reopened, deleted, written concurrently, written in a transaction that rolled back.
import test, { type ExecutionContext } from 'ava';
import { claimWorld, claimed, complete, newJob, type World } from '../jobs/claim-helpers.ts';
import { JobStatisticsToken, PipelineStatisticsToken, type JobStatistics, type PipelineStatistics } from '../../core/ports/stats.ts';
import { newId } from '../../core/ids.ts';
import pg from 'pg';

const DAY = 86_400_000;
const WINDOWS = [1, 7, 30, 90];
let w: World;
let jobs: JobStatistics;
let pipelines: PipelineStatistics;
let projects: string[];
test.before(async () => {
  w = await claimWorld('rollups');
  jobs = w.ctx.srv.kernel.container.resolve(JobStatisticsToken);
  pipelines = w.ctx.srv.kernel.container.resolve(PipelineStatisticsToken);
  projects = [w.projectA, w.projectA2];
});
test.after.always(() => w?.ctx.srv.stop());

const FAILED = `phase = 'cancelled' AND close_reason LIKE 'attempt % failed%'`;
const utcMidnight = (ago: number) => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - ago));
};

/** The figures counted straight from jobs, as the statistics answered before the rollups. */
async function rawJobs(since: Date) {
  const b = { projects, since };
  const { rows: byProject } = await w.db.raw(
    `SELECT p.id AS project_id,
       (SELECT count(*) FROM jobs WHERE project_id = p.id AND created_at >= :since)::int AS created,
       (SELECT count(*) FROM jobs WHERE project_id = p.id AND phase = 'done' AND closed_at >= :since)::int AS completed,
       (SELECT count(*) FROM jobs WHERE project_id = p.id AND ${FAILED} AND closed_at >= :since)::int AS failed,
       (SELECT count(*) FROM jobs WHERE project_id = p.id AND phase = 'active')::int AS active
     FROM unnest(CAST(:projects AS text[])) AS p(id) ORDER BY p.id`,
    b,
  );
  const { rows: byDay } = await w.db.raw(
    `SELECT day, sum(c)::int AS created, sum(d)::int AS completed, sum(f)::int AS failed FROM (
       SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, 1 AS c, 0 AS d, 0 AS f FROM jobs WHERE project_id = ANY(:projects) AND created_at >= :since
       UNION ALL SELECT to_char(closed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), 0, 1, 0 FROM jobs WHERE project_id = ANY(:projects) AND phase = 'done' AND closed_at >= :since
       UNION ALL SELECT to_char(closed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), 0, 0, 1 FROM jobs WHERE project_id = ANY(:projects) AND ${FAILED} AND closed_at >= :since
     ) x GROUP BY day ORDER BY day`,
    b,
  );
  const sum = (k: 'created' | 'completed' | 'failed' | 'active') => byProject.reduce((n: number, r: any) => n + r[k], 0);
  return { totals: { created: sum('created'), completed: sum('completed'), failed: sum('failed'), active: sum('active') }, byProject, byDay };
}

async function rawRuns(since: Date) {
  const { rows } = await w.db.raw(
    `SELECT project_id, pipeline_name, count(*)::int AS runs, count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
       count(*) FILTER (WHERE status = 'failed')::int AS failed,
       count(*) FILTER (WHERE status IN ('succeeded', 'failed', 'cancelled'))::int AS finished,
       avg(extract(epoch FROM completed_at - started_at)) FILTER (WHERE status IN ('succeeded', 'failed', 'cancelled') AND started_at IS NOT NULL AND completed_at IS NOT NULL) AS avg
     FROM pipeline_runs WHERE project_id = ANY(:projects) AND created_at >= :since
     GROUP BY GROUPING SETS ((), (project_id, pipeline_name)) ORDER BY project_id NULLS FIRST, pipeline_name`,
    { projects, since },
  );
  const figures = (r: any) => ({
    runs: r.runs,
    succeeded: r.succeeded,
    failed: r.failed,
    success_rate: r.finished === 0 ? 0 : Math.round((r.succeeded / r.finished) * 10_000) / 10_000,
    avg_duration_seconds: r.avg === null ? 0 : Math.round(Number(r.avg) * 1000) / 1000,
  });
  const [total, ...groups] = rows;
  return { summary: figures(total), byPipeline: groups.map((r: any) => ({ project_id: r.project_id, pipeline_name: r.pipeline_name, ...figures(r) })) };
}

/** Every window (and the given instants as window starts) answers exactly the direct counts. */
async function sameAsRaw(t: ExecutionContext, what: string, extraStarts: Date[] = []) {
  const now = Date.now();
  for (const since of [...WINDOWS.map((d) => new Date(now - d * DAY)), ...extraStarts]) {
    const label = `${what}, since ${since.toISOString()}`;
    const raw = await rawJobs(since);
    t.deepEqual(await jobs.counts(projects, since), raw.totals, label);
    t.deepEqual(await jobs.countsByProject(projects, since), raw.byProject, label);
    t.deepEqual(await jobs.countsByDay(projects, since), raw.byDay, label);
    const runs = await rawRuns(since);
    t.deepEqual(await pipelines.summary(projects, since), runs.summary, label);
    t.deepEqual(await pipelines.byPipeline(projects, since), runs.byPipeline, label);
  }
}

const runRow = (project: string, name: string, status: string, created: Date, seconds: number | null) => ({
  id: newId('prun'),
  project_id: project,
  pipeline_name: name,
  status,
  manifest_hash: 'h',
  created_at: created,
  started_at: seconds === null ? null : created,
  completed_at: seconds === null ? null : new Date(created.getTime() + seconds * 1000),
});

test.serial('jobs created, completed and failed through the API, then dated across day boundaries, count as directly', async (t) => {
  const made: string[] = [];
  for (let i = 0; i < 12; i++) {
    const job = await newJob(w, {}, projects[i % 2]);
    made.push(job.id);
    if (i % 4 === 3) continue; // stays ready
    const { attempt } = await claimed(t, w, job.id);
    if (i % 4 === 2) continue; // stays active
    const result = i % 4 === 0 ? { status: 'success' } : { status: 'failed', reason: 'boom' };
    t.is((await complete(w, job.id, attempt, result)).statusCode, 200);
  }
  await sameAsRaw(t, 'today');

  // Days pass: move each job's dates back by a different amount, some to exactly a UTC midnight, one
  // closed a day after it was created, some just before and after the window edges.
  const now = Date.now();
  const moves: [number, Date, Date | null][] = [
    [0, utcMidnight(1), new Date(utcMidnight(1).getTime() + 1)],
    [1, new Date(utcMidnight(1).getTime() - 1), utcMidnight(0)],
    [2, new Date(now - 7 * DAY - 60_000), null],
    [3, new Date(now - 7 * DAY + 60_000), null],
    [4, new Date(now - 29.5 * DAY), new Date(now - 28.5 * DAY)],
    [5, new Date(now - 45 * DAY), new Date(now - 44 * DAY)],
    [6, new Date(now - 89 * DAY), null],
    [8, new Date(now - 91 * DAY), new Date(now - 89.9 * DAY)],
    [9, new Date(now - 3 * DAY), new Date(now - 2 * DAY)],
  ];
  for (const [i, created, closed] of moves) {
    await w
      .db('jobs')
      .where({ id: made[i] })
      .update(closed ? { created_at: created, closed_at: closed } : { created_at: created });
  }
  await sameAsRaw(t, 'dated back', [utcMidnight(1), new Date(utcMidnight(1).getTime() - 1), new Date(utcMidnight(1).getTime() + 1), utcMidnight(0)]);

  // A done job reopened, a failed one closed done instead, one deleted.
  await w.db('jobs').where({ id: made[0] }).update({ phase: 'ready', closed_at: null, close_reason: null });
  await w.db('jobs').where({ id: made[1] }).update({ phase: 'done', close_reason: 'completed' });
  await w.db('job_relations').where({ job_id: made[9] }).orWhere({ related_job_id: made[9] }).delete();
  await w.db('jobs').where({ id: made[9] }).delete();
  await sameAsRaw(t, 'reopened, reclassified, deleted');
});

test.serial('concurrent writers, a rolled-back transaction and pipeline runs changing status count as directly', async (t) => {
  const now = Date.now();
  // Rows written directly, as a restore or the benchmark would, from several connections at once.
  await Promise.all(
    Array.from({ length: 6 }, (_, k) =>
      w.db.transaction(async (trx) => {
        const rows = Array.from({ length: 20 }, (_, i) => {
          const created = new Date(now - (((k * 20 + i) * 7_777_777) % (95 * DAY)));
          const phase = ['done', 'cancelled', 'cancelled', 'active', 'ready'][i % 5];
          return {
            id: `roll-${k}-${i}`,
            project_id: projects[i % 2],
            title: 'rollup',
            phase,
            created_at: created,
            updated_at: created,
            closed_at: phase === 'done' || phase === 'cancelled' ? new Date(created.getTime() + (i % 3) * DAY + 1000) : null,
            close_reason: phase === 'done' ? 'completed' : phase === 'cancelled' ? (i % 2 ? 'attempt 1 failed (exit 1): x' : 'cancelled by a user') : null,
          };
        });
        await trx('jobs').insert(rows);
      }),
    ),
  );
  await t.throwsAsync(
    w.db.transaction(async (trx) => {
      await trx('jobs').insert({ id: 'roll-undone', project_id: w.projectA, title: 'x', phase: 'done', closed_at: new Date(), close_reason: 'completed' });
      throw new Error('rolled back');
    }),
    { message: 'rolled back' },
  );

  const runs = [
    runRow(w.projectA, 'ci', 'succeeded', new Date(now - 2 * DAY), 60),
    runRow(w.projectA, 'ci', 'running', new Date(now - 3_600_000), null),
    runRow(w.projectA, 'ci', 'failed', utcMidnight(6), 45.5),
    runRow(w.projectA2, 'deploy', 'cancelled', new Date(now - 7 * DAY + 30_000), 12),
    runRow(w.projectA2, 'deploy', 'succeeded', new Date(now - 7 * DAY - 30_000), 99),
    runRow(w.projectA2, 'deploy', 'pending', new Date(now - 40 * DAY), null),
    runRow(w.projectA2, 'nightly', 'succeeded', new Date(now - 89 * DAY), 3600),
  ];
  await w.db('pipeline_runs').insert(runs);
  await sameAsRaw(t, 'concurrent rows and runs', [utcMidnight(6), new Date(utcMidnight(6).getTime() + 1)]);

  const started = new Date(now - 3_000_000);
  await w.db('pipeline_runs').where({ id: runs[1].id }).update({ started_at: started });
  await w
    .db('pipeline_runs')
    .where({ id: runs[1].id })
    .update({ status: 'succeeded', completed_at: new Date(started.getTime() + 1234) });
  await w.db('pipeline_runs').where({ id: runs[5].id }).update({ status: 'failed' });
  await w.db('pipeline_runs').where({ id: runs[0].id }).delete();
  await sameAsRaw(t, 'runs finished and deleted');
});

test.serial('two transactions of one shard committing the same project days in opposite orders both commit', async (t) => {
  // Deferred row triggers add to the rollup rows in each transaction's row order; two backends of one
  // shard (pg_backend_pid() % 8) must not lock those rows in a cycle at commit.
  const connection = (w.db.client as any).config.connection;
  const clients: pg.Client[] = [];
  const byShard = new Map<number, pg.Client>();
  let pair: [pg.Client, pg.Client] | undefined;
  try {
    while (!pair && clients.length < 40) {
      const c = new pg.Client(typeof connection === 'string' ? { connectionString: connection } : connection);
      await c.connect();
      clients.push(c);
      const { rows } = await c.query('SELECT pg_backend_pid() % 8 AS shard');
      const other = byShard.get(rows[0].shard);
      if (other) pair = [other, c];
      else byShard.set(rows[0].shard, c);
    }
    if (!pair) return t.fail('no two backends share a shard');
    const days = Array.from({ length: 40 }, (_, d) => new Date(Date.now() - d * DAY));
    for (let round = 0; round < 5; round++) {
      const write = async (c: pg.Client, side: number) => {
        await c.query('BEGIN');
        const order = side ? [...days].reverse() : days;
        for (const [i, created] of order.entries()) {
          await c.query('INSERT INTO jobs (id, project_id, title, phase, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)', [
            `cycle-${round}-${side}-${i}`,
            w.projectA,
            'cycle',
            'ready',
            created,
          ]);
        }
      };
      await Promise.all(pair.map((c, side) => write(c, side)));
      const commits = await Promise.allSettled(pair.map((c) => c.query('COMMIT')));
      t.deepEqual(
        commits.map((c) => (c.status === 'fulfilled' ? 'committed' : (c.reason as Error).message)),
        ['committed', 'committed'],
      );
    }
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
  await sameAsRaw(t, 'opposite orders');
});
