/**
 * Environments the manifest does not define (created through the API or by `env-ensure`) are usable
 * where a pipeline run names one: `POST …/pipelines/{name}/run` with `env`, and an event with
 * `env_name` routed to a pipeline. Their own pipeline_inputs feed the run as a manifest
 * environment's would; an environment that exists nowhere is a 422 naming it, a suspended one a
 * 409 with the reason, and neither writes anything.
 */
import test from 'ava';
import { assertError } from '../orgs/helpers.ts';
import type { World } from '../jobs/claim-helpers.ts';
import { eventWorld, postEvent, routed, syncManifest } from '../events/helpers.ts';
import { PIPELINES, startRun } from './helpers.ts';

/** PIPELINES (ship, diamond, …; environments staging and other) and a pipeline an event starts. */
const MANIFEST = PIPELINES.replace(
  'pipelines:\n',
  'pipelines:\n  stage:\n    trigger: { event: { type: manual.stage } }\n    steps:\n      - { name: deploy, run: make deploy }\n',
);

let w: World;
test.before(async () => {
  w = await eventWorld('pipeenvs', true);
  await syncManifest(w, MANIFEST);
  const ensure = (body: Record<string, unknown>) => w.owner.api.post(`/projects/${w.projectA}/environments`, body);
  for (const body of [
    { name: 'pr-12', kind: 'preview', pipeline: 'ship', pipeline_inputs: { tier: 'tiny', number: 12 } },
    { name: 'pr-13', kind: 'preview', pipeline: 'stage', pipeline_inputs: { number: 13 } },
    { name: 'pr-14', kind: 'preview', pipeline: 'ship', pipeline_inputs: { number: 14 } },
  ]) {
    const res = await ensure(body);
    if (res.statusCode !== 201) throw new Error(`ensure: ${res.statusCode} ${JSON.stringify(res.body)}`);
  }
  const suspended = await w.owner.api.post(`/projects/${w.projectA}/environments/pr-14/suspend`, { reason: 'night' });
  if (suspended.statusCode !== 200) throw new Error(`suspend: ${suspended.statusCode} ${JSON.stringify(suspended.body)}`);
});
test.after.always(() => w?.ctx.srv.stop());

const counts = async () => ({
  runs: Number((await w.db('pipeline_runs').where({ project_id: w.projectA }).count({ n: '*' }).first())!.n),
  jobs: Number((await w.db('jobs').where({ project_id: w.projectA }).count({ n: '*' }).first())!.n),
});

test.serial("a run naming an environment created through the API: its pipeline_inputs under the run's inputs, its name on the run and the steps", async (t) => {
  const run = await startRun(w, 'ship', { env: 'pr-12', inputs: { extra: 1 } });
  t.like(run, { env_name: 'pr-12', pipeline_name: 'ship' });
  t.deepEqual(run.inputs, { tier: 'tiny', number: 12, extra: 1 });
  const job = await w.db('jobs').where({ id: run.steps[0].job_id }).first('env_name');
  t.is(job.env_name, 'pr-12');
  const other = await startRun(w, 'diamond', { env: 'pr-12' });
  t.deepEqual(other.inputs, {}, "the environment names another pipeline: its inputs are not this run's");
});

test.serial('a manifest environment still feeds its pipeline_inputs', async (t) => {
  t.deepEqual((await startRun(w, 'ship', { env: 'staging' })).inputs, { tier: 'small', region: 'eu' });
});

test.serial('an environment that exists nowhere is a 422 naming it; a suspended one a 409 with the reason; neither writes anything', async (t) => {
  const before = await counts();
  const base = `/projects/${w.projectA}/pipelines`;
  assertError(t, await w.owner.api.post(`${base}/ship/run`, { env: 'pr-99' }), 422, /environment 'pr-99' does not exist: the manifest does not define it/);
  assertError(t, await w.owner.api.post(`${base}/ship/run`, { env: 'pr-14' }), 409, 'environment pr-14 is suspended: night');
  t.is((await w.owner.api.post(`/projects/${w.projectA}/environments/other/suspend`, {})).statusCode, 200);
  assertError(t, await w.owner.api.post(`${base}/diamond/run`, { env: 'other' }), 409, 'environment other is suspended');
  t.deepEqual(await counts(), before);
});

test.serial(
  'an event with the env_name of an ensured environment starts the pipeline with its inputs; unknown and suspended ones fail the event, starting nothing',
  async (t) => {
    const event = await routed(w, (await postEvent(w, { type: 'manual.stage', env_name: 'pr-13', payload: { sha: 'x' } })).id);
    t.is(event.status, 'completed', JSON.stringify(event));
    const run = (await w.owner.api.get(`/projects/${w.projectA}/runs/${event.routing.matched[0].run_id}`)).body;
    t.like(run, { env_name: 'pr-13', pipeline_name: 'stage' });
    t.deepEqual(run.inputs, { number: 13, sha: 'x' });

    const before = await counts();
    const unknown = await routed(w, (await postEvent(w, { type: 'manual.stage', env_name: 'pr-99' })).id);
    t.is(unknown.status, 'failed');
    t.regex(unknown.error, /^pipeline stage: environment 'pr-99' does not exist: the manifest does not define it/);
    const suspended = await routed(w, (await postEvent(w, { type: 'manual.stage', env_name: 'pr-14' })).id);
    t.is(suspended.status, 'failed');
    t.is(suspended.error, 'pipeline stage: environment pr-14 is suspended: night');
    t.deepEqual(await counts(), before);
  },
);
