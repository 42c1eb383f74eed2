import test from 'ava';
import { assertError, memberOf } from '../orgs/helpers.ts';
import { claimWorld, claimed, complete, newJob, type World } from '../jobs/claim-helpers.ts';
import { EnvironmentDirectoryToken, type EnvironmentStatus } from '../../core/ports/environments.ts';
import { newId } from '../../core/ids.ts';

/** A fake environments domain: org A's project A has two environments. */
let environments: EnvironmentStatus[] = [];
let w: World;
let orgA: string;
test.before(async () => {
  w = await claimWorld('analytics', {
    configure: (c) =>
      c.registerInstance(EnvironmentDirectoryToken, {
        ofProjects: async (ids) => environments.filter((e) => ids.includes(e.project_id)),
        forRun: async () => null,
      }),
  });
  orgA = (await w.db('projects').where({ id: w.projectA }).first('org_id')).org_id;
});
test.after.always(() => w?.ctx.srv.stop());

const ZERO_SUMMARY = {
  projects: 0,
  jobs: { created: 0, completed: 0, failed: 0, active: 0 },
  pipelines: { runs: 0, success_rate: 0, avg_duration_seconds: 0 },
  environments: { total: 0, healthy: 0, degraded: 0, unknown: 0 },
};

/** A pipeline run row as the pipelines domain writes it (the analytics read only counts and times). */
const run = (project: string, name: string, status: string, createdAgoDays: number, seconds: number | null) => {
  const created = new Date(Date.now() - createdAgoDays * 86_400_000);
  return {
    id: newId('prun'),
    project_id: project,
    pipeline_name: name,
    status,
    manifest_hash: 'h',
    created_at: created,
    started_at: seconds === null ? null : created,
    completed_at: seconds === null ? null : new Date(created.getTime() + seconds * 1000),
  };
};

test.serial('an org with nothing answers zeros, not 404; window defaults to 7d, anything else is 400; orgs:read; others 404', async (t) => {
  const empty = (await w.outsider.api.post('/orgs', { name: 'Empty analytics org' })).body.id;
  const res = await w.outsider.api.get(`/orgs/${empty}/analytics/summary`);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body), ['as_of', 'window', 'projects', 'jobs', 'pipelines', 'environments']);
  t.like(res.body, { window: '7d', ...ZERO_SUMMARY });
  t.deepEqual((await w.outsider.api.get(`/orgs/${empty}/analytics/env-health`)).body.environments, []);
  t.like((await w.outsider.api.get(`/orgs/${empty}/analytics/jobs?window=90d`)).body, { window: '90d', jobs: ZERO_SUMMARY.jobs, by_project: [], by_day: [] });
  t.like((await w.outsider.api.get(`/orgs/${empty}/analytics/pipelines?window=1d`)).body, { window: '1d', pipelines: ZERO_SUMMARY.pipelines, by_pipeline: [] });
  for (const path of ['summary', 'jobs', 'pipelines', 'env-health']) {
    assertError(t, await w.outsider.api.get(`/orgs/${empty}/analytics/${path}?window=14d`), 400, /"window" must be one of \[1d, 7d, 30d, 90d\]/);
    assertError(t, await w.owner.api.get(`/orgs/${empty}/analytics/${path}`), 404, /not found/);
  }
  const member = await memberOf(w.ctx, empty, 'analytics-member');
  t.is((await member.api.get(`/orgs/${empty}/analytics/summary`)).statusCode, 200, 'members have orgs:read');
});

test.serial('summary, jobs and pipelines count the window; active is now; environments come through the seam', async (t) => {
  const done = await newJob(w);
  const { attempt: a1 } = await claimed(t, w, done.id);
  t.is((await complete(w, done.id, a1, { status: 'success' })).statusCode, 200);
  const failed = await newJob(w, {}, w.projectA2);
  const { attempt: a2 } = await claimed(t, w, failed.id);
  t.is((await complete(w, failed.id, a2, { status: 'failed', reason: 'boom' })).statusCode, 200);
  const active = await newJob(w);
  await claimed(t, w, active.id);
  await newJob(w); // ready: created only
  const old = await newJob(w);
  await w
    .db('jobs')
    .where({ id: old.id })
    .update({ created_at: new Date(Date.now() - 10 * 86_400_000) });
  await newJob(w, {}, w.projectB, w.outsider); // another org

  await w.db('pipeline_runs').insert([
    run(w.projectA, 'ci', 'succeeded', 1, 60),
    run(w.projectA, 'ci', 'succeeded', 2, 120),
    run(w.projectA2, 'deploy', 'failed', 1, 30),
    run(w.projectA2, 'deploy', 'running', 0, null),
    run(w.projectA, 'ci', 'succeeded', 20, 600), // outside 7d
    run(w.projectB, 'ci', 'failed', 1, 10), // another org
  ]);
  environments = [
    { name: 'staging', project_id: w.projectA, status: 'healthy' },
    { name: 'prod', project_id: w.projectA, status: 'degraded' },
    { name: 'elsewhere', project_id: w.projectB, status: 'healthy' },
  ];

  const summary = (await w.owner.api.get(`/orgs/${orgA}/analytics/summary`)).body;
  t.like(summary, {
    window: '7d',
    projects: 2,
    jobs: { created: 4, completed: 1, failed: 1, active: 1 },
    pipelines: { runs: 4, success_rate: 0.6667, avg_duration_seconds: 70 },
    environments: { total: 2, healthy: 1, degraded: 1, unknown: 0 },
  });
  t.like((await w.owner.api.get(`/orgs/${orgA}/analytics/summary?window=30d`)).body, {
    jobs: { created: 5 },
    pipelines: { runs: 5, success_rate: 0.75, avg_duration_seconds: 202.5 },
  });

  const jobs = (await w.owner.api.get(`/orgs/${orgA}/analytics/jobs`)).body;
  t.deepEqual(jobs.jobs, summary.jobs);
  t.deepEqual(
    jobs.by_project,
    [
      { project_id: w.projectA, created: 3, completed: 1, failed: 0, active: 1 },
      { project_id: w.projectA2, created: 1, completed: 0, failed: 1, active: 0 },
    ].sort((a, b) => a.project_id.localeCompare(b.project_id)),
  );
  t.deepEqual(jobs.by_day, [{ day: new Date().toISOString().slice(0, 10), created: 4, completed: 1, failed: 1 }]);

  const pipelines = (await w.owner.api.get(`/orgs/${orgA}/analytics/pipelines`)).body;
  t.deepEqual(pipelines.pipelines, summary.pipelines);
  t.deepEqual(
    pipelines.by_pipeline.map((p: any) => [p.project_id, p.pipeline_name, p.runs, p.succeeded, p.failed, p.success_rate, p.avg_duration_seconds]).sort(),
    [
      [w.projectA, 'ci', 2, 2, 0, 1, 90],
      [w.projectA2, 'deploy', 2, 0, 1, 0, 30],
    ].sort(),
  );

  const health = (await w.owner.api.get(`/orgs/${orgA}/analytics/env-health`)).body;
  t.deepEqual(health.environments, [
    { name: 'prod', project_id: w.projectA, status: 'degraded' },
    { name: 'staging', project_id: w.projectA, status: 'healthy' },
  ]);
});
