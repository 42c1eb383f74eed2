import test from 'ava';
import { assertError } from '../orgs/helpers.ts';
import { claimed, jobRow, attemptsOf, type World } from '../jobs/claim-helpers.ts';
import { finishStep, getRun, pipelineWorld, startRun, statuses, stepOf } from './helpers.ts';

let w: World;
test.before(async () => {
  w = await pipelineWorld('pipes');
});
test.after.always(() => w?.ctx.srv.stop());

const failedEvents = (runId: string) =>
  w.db('events').where({ project_id: w.projectA, type: 'system.pipeline.failed' }).whereRaw("payload_json->>'run_id' = ?", [runId]);
const RUN_ID = /^prun_[0-7][0-9a-hjkmnp-tv-z]{25}$/;

test.serial('a run makes one job per step, wired by depends_on, with the execution type and inputs', async (t) => {
  const run = await startRun(w, 'ship', { ref: 'main', inputs: { tier: 'large', extra: 1 }, env: 'staging' });
  t.regex(run.id, RUN_ID);
  t.like(run, {
    project_id: w.projectA,
    pipeline_name: 'ship',
    status: 'pending',
    ref: 'main',
    git_sha: null,
    env_name: 'staging',
    only_steps: null,
    error_message: null,
  });
  t.deepEqual(run.inputs, { tier: 'large', region: 'eu', extra: 1 }, "run-time inputs override the environment's pipeline_inputs key by key");
  t.regex(run.manifest_hash, /^sha256:/);
  t.deepEqual(
    run.steps.map((s: any) => [s.name, s.execution_type, s.depends_on, s.status]),
    [
      ['build', 'action', [], 'pending'],
      ['test', 'script', ['build'], 'pending'],
      ['review', 'agent', ['test'], 'pending'],
    ],
  );
  const test_ = await jobRow(w, stepOf(run, 'test').job_id);
  t.like(test_, { project_id: w.projectA, phase: 'ready', env_name: 'staging', depth: 0 });
  t.like(test_.hints, { pipeline_run_id: run.id, pipeline_name: 'ship', step_name: 'test', execution_type: 'script', timeout_seconds: 120 });
  t.deepEqual(test_.hints.step, { kind: 'script', script: { run: 'npm test', timeout: 120 } });
  t.deepEqual(JSON.parse(test_.hints.request_json), run.inputs);
  t.deepEqual(test_.git, { ref: 'main' });
  t.deepEqual(test_.labels, ['pipeline:ship', 'step:test']);
  const relations = await w.db('job_relations').where({ job_id: test_.id });
  t.deepEqual(
    relations.map((r: any) => [r.related_job_id, r.relation_type]),
    [[stepOf(run, 'build').job_id, 'blocked_by']],
  );

  const jobs = await w.owner.api.get(`/projects/${w.projectA}/runs/${run.id}/jobs`);
  t.is(jobs.statusCode, 200);
  t.deepEqual(
    jobs.body.data.map((j: any) => j.id),
    run.steps.map((s: any) => s.job_id),
  );
  t.is(jobs.body.data[0].hints.execution_type, 'action');
});

test.serial('steps run in order; the run goes pending → running → succeeded as its jobs move', async (t) => {
  const run = await startRun(w, 'ship');
  const build = await claimed(t, w, stepOf(run, 'build').job_id);
  let now = await getRun(w, run.id);
  t.is(now.status, 'running');
  t.is(stepOf(now, 'build').status, 'running');
  t.truthy(now.started_at);
  const blocked = await w.owner.api.post(`/jobs/${stepOf(run, 'test').job_id}/claim`, {});
  t.is(blocked.statusCode, 409, 'a step waits for the steps it depends on');
  t.is(
    (
      await w.owner.api.post(`/jobs/${build.job.id}/attempts/${build.attempt.id}/complete`, {
        lease_token: build.attempt.lease_token,
        result: { status: 'success' },
      })
    ).statusCode,
    200,
  );
  now = await getRun(w, run.id);
  t.deepEqual(statuses(now), { build: 'succeeded', test: 'pending', review: 'pending' });
  t.is(now.status, 'running');
  await finishStep(t, w, run, 'test');
  await finishStep(t, w, run, 'review');
  now = await getRun(w, run.id);
  t.is(now.status, 'succeeded');
  t.truthy(now.completed_at);
  t.true(now.steps.every((s: any) => s.completed_at && s.started_at));
});

test.serial('a failed step fails the run, cancels its dependents (other branches go on) and emits system.pipeline.failed', async (t) => {
  const run = await startRun(w, 'diamond');
  await finishStep(t, w, run, 'a');
  const right = await claimed(t, w, stepOf(run, 'right').job_id);
  await finishStep(t, w, run, 'left', 'failed');
  let now = await getRun(w, run.id);
  t.is(now.status, 'failed');
  t.regex(now.error_message, /^step left failed: attempt 1 failed/);
  t.deepEqual(statuses(now), { a: 'succeeded', left: 'failed', right: 'running', gate: 'cancelled', after: 'cancelled' });
  t.is((await jobRow(w, stepOf(run, 'after').job_id)).phase, 'cancelled');
  t.is((await jobRow(w, stepOf(run, 'right').job_id)).phase, 'active', 'a step on another branch keeps running');
  const [event] = await failedEvents(run.id);
  t.like(event, { source: 'system', status: 'pending', actor_type: 'system' });
  t.regex(event.id, /^evt_/);
  t.deepEqual(Object.keys(event.payload_json).sort(), [
    'error_code',
    'error_message',
    'exit_code',
    'metadata',
    'mutation_id',
    'pipeline_name',
    'request_id',
    'run_id',
  ]);
  t.like(event.payload_json, { run_id: run.id, pipeline_name: 'diamond', error_code: 'STEP_FAILED', error_message: now.error_message });
  t.like(event.payload_json.metadata, { step_name: 'left', job_id: stepOf(run, 'left').job_id });

  await w.owner.api.post(`/jobs/${right.job.id}/attempts/${right.attempt.id}/complete`, {
    lease_token: right.attempt.lease_token,
    result: { status: 'success' },
  });
  now = await getRun(w, run.id);
  t.is(now.status, 'failed', 'failed is terminal');
  t.is(stepOf(now, 'right').status, 'succeeded');
  t.is((await failedEvents(run.id)).length, 1, 'emitted once');
});

test.serial('max_attempts retries apply per step before the run fails', async (t) => {
  const run = await startRun(w, 'ship', { only_steps: ['build'] });
  await w
    .db('jobs')
    .where({ id: stepOf(run, 'build').job_id })
    .update({ hints: w.db.raw(`hints || '{"max_attempts": 2}'::jsonb`) });
  await finishStep(t, w, run, 'build', 'failed');
  let now = await getRun(w, run.id);
  t.is(stepOf(now, 'build').status, 'pending', 'back to ready for its second attempt');
  t.is(now.status, 'running');
  await finishStep(t, w, run, 'build');
  now = await getRun(w, run.id);
  t.is(now.status, 'succeeded');
  t.is((await attemptsOf(w, stepOf(run, 'build').job_id)).length, 2);
});

test.serial('an approval step holds the run until approved; approve releases it', async (t) => {
  const run = await startRun(w, 'diamond');
  t.is((await jobRow(w, stepOf(run, 'gate').job_id)).phase, 'backlog', 'held');
  const early = await w.owner.api.post(`/pipeline-runs/${run.id}/approve`, {});
  assertError(t, early, 409, `pipeline run ${run.id} is pending: only a run awaiting approval can be approved`);
  for (const step of ['a', 'left', 'right']) await finishStep(t, w, run, step);
  let now = await getRun(w, run.id);
  t.is(now.status, 'awaiting_approval');
  t.is(stepOf(now, 'gate').status, 'awaiting_approval');
  const approved = await w.owner.api.post(`/pipeline-runs/${run.id}/approve`, { comment: 'ship it' });
  t.is(approved.statusCode, 200, JSON.stringify(approved.body));
  t.is(approved.body.status, 'running');
  t.like(stepOf(approved.body, 'gate'), { status: 'pending', approved_by: w.owner.id });
  t.truthy(stepOf(approved.body, 'gate').approved_at);
  t.is((await jobRow(w, stepOf(run, 'gate').job_id)).phase, 'ready');
  await finishStep(t, w, run, 'gate');
  await finishStep(t, w, run, 'after');
  now = await getRun(w, run.id);
  t.is(now.status, 'succeeded');
});

test.serial('an approval on the first step makes the run await approval at once', async (t) => {
  const run = await startRun(w, 'approve-first');
  t.is(run.status, 'awaiting_approval');
  t.is(stepOf(run, 'hold').status, 'awaiting_approval');
  const approved = await w.owner.api.post(`/pipeline-runs/${run.id}/approve`);
  t.is(approved.body.status, 'pending', 'nothing has started yet');
});

test.serial('cancel ends the run, cancels unfinished steps and ends running attempts; a second cancel is 409', async (t) => {
  const run = await startRun(w, 'diamond');
  await finishStep(t, w, run, 'a');
  const left = await claimed(t, w, stepOf(run, 'left').job_id);
  const res = await w.owner.api.post(`/pipeline-runs/${run.id}/cancel`, { reason: 'wrong branch' });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.like(res.body, { status: 'cancelled', cancel_reason: 'wrong branch' });
  t.deepEqual(statuses(res.body), { a: 'succeeded', left: 'cancelled', right: 'cancelled', gate: 'cancelled', after: 'cancelled' });
  const job = await jobRow(w, left.job.id);
  t.is(job.phase, 'cancelled');
  t.is(job.close_reason, `pipeline run ${run.id} cancelled: wrong branch`);
  t.is((await attemptsOf(w, left.job.id))[0].status, 'cancelled');
  assertError(t, await w.owner.api.post(`/pipeline-runs/${run.id}/cancel`, {}), 409, `pipeline run ${run.id} already ended: cancelled`);
  assertError(t, await w.owner.api.post(`/pipeline-runs/${run.id}/approve`, {}), 409, /is cancelled/);
  t.is((await failedEvents(run.id)).length, 0, 'a cancelled run did not fail');
});

test.serial('only_steps runs a subset; dependencies outside it count as met', async (t) => {
  const run = await startRun(w, 'ship', { only_steps: ['test', 'review'] });
  t.deepEqual(run.only_steps, ['test', 'review']);
  t.deepEqual(
    run.steps.map((s: any) => [s.name, s.depends_on]),
    [
      ['test', []],
      ['review', ['test']],
    ],
  );
  await finishStep(t, w, run, 'test');
  await finishStep(t, w, run, 'review');
  t.is((await getRun(w, run.id)).status, 'succeeded');
});

test.serial('a 40-hex ref is the run git_sha; an environment naming another pipeline adds no inputs', async (t) => {
  const sha = 'a'.repeat(40);
  const run = await startRun(w, 'ship', { ref: sha, env: 'other', inputs: { x: 1 } });
  t.is(run.git_sha, sha);
  t.deepEqual(run.inputs, { x: 1 });
});

test.serial('bad run requests: 400 naming the field, 404 for unknown pipelines, 422 for unknown environments and steps; nothing is created', async (t) => {
  const before = await w.db('pipeline_runs').count({ n: '*' }).first();
  const jobsBefore = await w.db('jobs').count({ n: '*' }).first();
  const base = `/projects/${w.projectA}/pipelines`;
  assertError(t, await w.owner.api.post(`${base}/ship/run`, { inputs: 'x' }), 400, /"inputs" must be of type object/);
  assertError(t, await w.owner.api.post(`${base}/ship/run`, { only_steps: [] }), 400, /"only_steps" must contain at least 1 items/);
  assertError(t, await w.owner.api.post(`${base}/ship/run`, { bogus: 1 }), 400, /"bogus" is not allowed/);
  assertError(t, await w.owner.api.post(`${base}/nope/run`, {}), 404, "pipeline nope not found in the project's manifest");
  assertError(
    t,
    await w.owner.api.post(`${base}/ship/run`, { env: 'prod' }),
    422,
    "environment 'prod' does not exist: the manifest does not define it and it was not created through the API or env-ensure",
  );
  assertError(
    t,
    await w.owner.api.post(`${base}/ship/run`, { only_steps: ['build', 'deploy', 'x'] }),
    422,
    'only_steps names steps the pipeline does not have: deploy, x',
  );
  assertError(t, await w.owner.api.post(`/projects/${w.projectA2}/pipelines/ship/run`, {}), 404, `project ${w.projectA2} has no synced manifest`);
  t.deepEqual(await w.db('pipeline_runs').count({ n: '*' }).first(), before);
  t.deepEqual(await w.db('jobs').count({ n: '*' }).first(), jobsBefore);
});

test.serial('runs are listed newest first with a status filter, and read by pipeline or by project', async (t) => {
  const a = await startRun(w, 'approve-first');
  const b = await startRun(w, 'approve-first');
  await w.owner.api.post(`/pipeline-runs/${b.id}/cancel`);
  const all = await w.owner.api.get(`/projects/${w.projectA}/pipelines/approve-first/runs?limit=100`);
  t.is(all.statusCode, 200);
  t.deepEqual(
    all.body.data.slice(0, 2).map((r: any) => r.id),
    [b.id, a.id],
  );
  t.true(all.body.data.every((r: any) => r.pipeline_name === 'approve-first' && r.steps.length === 2));
  const cancelled = await w.owner.api.get(`/projects/${w.projectA}/pipelines/approve-first/runs?status=cancelled`);
  t.true(cancelled.body.data.some((r: any) => r.id === b.id));
  t.false(cancelled.body.data.some((r: any) => r.id === a.id));
  t.is((await w.owner.api.get(`/projects/${w.projectA}/pipelines/approve-first/runs/${a.id}`)).body.id, a.id);
  assertError(t, await w.owner.api.get(`/projects/${w.projectA}/pipelines/ship/runs/${a.id}`), 404, `pipeline run ${a.id} not found`);
  assertError(
    t,
    await w.owner.api.get(`/projects/${w.projectA}/runs/prun_01h455vb4pex5vsknk084sn02q`),
    404,
    'pipeline run prun_01h455vb4pex5vsknk084sn02q not found',
  );
  assertError(t, await w.owner.api.get(`/projects/${w.projectA}/runs/nope`), 400, /"run_id"/);
});

test.serial("another org's caller sees 404 for a run, never its project", async (t) => {
  const run = await startRun(w, 'approve-first');
  const message = `pipeline run ${run.id} not found`;
  assertError(t, await w.outsider.api.post(`/pipeline-runs/${run.id}/approve`, {}), 404, message);
  assertError(t, await w.outsider.api.post(`/pipeline-runs/${run.id}/cancel`, {}), 404, message);
  assertError(t, await w.outsider.api.get(`/pipeline-runs/${run.id}/stream`), 404, message);
  assertError(t, await w.outsider.api.get(`/projects/${w.projectB}/runs/${run.id}`), 404, message);
  t.is((await getRun(w, run.id)).status, 'awaiting_approval', 'unchanged');
});
