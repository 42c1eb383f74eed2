/**
 * Issue 34, item 8: a pipeline declares its inputs (`pipelines.<name>.inputs`: required, default,
 * description). A run missing a required one is refused with a 422 naming it and writes nothing,
 * through the route and through a trigger (the event fails with the reason); a default fills an
 * input not given; a caller's input the pipeline does not declare is refused, an event's payload
 * passes through; clients read the declarations with the pipeline.
 */
import test from 'ava';
import type { World } from '../jobs/claim-helpers.ts';
import { eventWorld, postEvent, routed, syncManifest } from '../events/helpers.ts';

const MANIFEST = `
pipelines:
  release:
    trigger: { event: { type: manual.release } }
    inputs:
      version: { required: true, description: the version to tag }
      channel: { default: stable, description: where it goes }
      notes: {}
    steps:
      - { name: tag, run: 'echo "v\${inputs.version} on \${inputs.channel}"' }
  open:
    steps:
      - { name: go, run: echo go }
environments:
  prod: { pipeline: release, pipeline_inputs: { version: '9.9.9' } }
`;

let w: World;
test.before(async () => {
  w = await eventWorld('declinputs', true);
  await syncManifest(w, MANIFEST);
});
test.after.always(() => w?.ctx.srv.stop());

const base = () => `/projects/${w.projectA}/pipelines`;
const run = (pipeline: string, body: Record<string, unknown>) => w.owner.api.post(`${base()}/${pipeline}/run`, body);
const counts = async () => ({
  runs: Number((await w.db('pipeline_runs').where({ project_id: w.projectA }).count({ n: '*' }).first())!.n),
  jobs: Number((await w.db('jobs').where({ project_id: w.projectA }).count({ n: '*' }).first())!.n),
});

test.serial('the pipeline and the list show its declared inputs; a pipeline that declares none has no inputs key', async (t) => {
  const one = await w.owner.api.get(`${base()}/release`);
  t.is(one.statusCode, 200, JSON.stringify(one.body));
  t.deepEqual(Object.keys(one.body.inputs), ['version', 'channel', 'notes'], "in the manifest's order");
  t.deepEqual(one.body.inputs, {
    version: { required: true, description: 'the version to tag' },
    channel: { default: 'stable', description: 'where it goes' },
    notes: {},
  });
  const list = await w.owner.api.get(base());
  t.deepEqual(
    list.body.data.map((p: any) => [p.name, Object.keys(p.inputs ?? {})]),
    [
      ['release', ['version', 'channel', 'notes']],
      ['open', []],
    ],
  );
  t.false('inputs' in list.body.data[1]);
});

test.serial('a run missing a required input is a 422 naming it (absent, null or empty), and nothing is written', async (t) => {
  const before = await counts();
  for (const inputs of [undefined, { version: null }, { version: '' }, { channel: 'beta' }]) {
    const res = await run('release', inputs === undefined ? {} : { inputs });
    t.is(res.statusCode, 422, JSON.stringify(res.body));
    t.is(res.body.message, 'required input version ("the version to tag") was not given: pass it in inputs (svc pipeline run release --input NAME=VALUE)');
    t.deepEqual(res.body.missing_inputs, ['version']);
  }
  t.deepEqual(await counts(), before);
});

test.serial('a default fills an input not given; a given one overrides it; the run and its steps carry them', async (t) => {
  const res = await run('release', { inputs: { version: '1.2.3' } });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.deepEqual(res.body.inputs, { channel: 'stable', version: '1.2.3' });
  const job = await w.db('jobs').where({ id: res.body.steps[0].job_id }).first('hints');
  t.deepEqual(JSON.parse(job.hints.request_json), { channel: 'stable', version: '1.2.3' });
  const beta = await run('release', { inputs: { version: '1.2.4', channel: 'beta', notes: 'n' } });
  t.is(beta.statusCode, 201, JSON.stringify(beta.body));
  t.deepEqual(beta.body.inputs, { channel: 'beta', version: '1.2.4', notes: 'n' });
});

test.serial("an environment's pipeline_inputs give a required input; the caller's inputs still override them", async (t) => {
  const res = await run('release', { env: 'prod' });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.deepEqual(res.body.inputs, { channel: 'stable', version: '9.9.9' });
  t.deepEqual((await run('release', { env: 'prod', inputs: { version: '2.0.0' } })).body.inputs, { channel: 'stable', version: '2.0.0' });
});

test.serial("a caller's input the pipeline does not declare is a 422 naming it (with the likely typo); a pipeline that declares none takes any", async (t) => {
  const before = await counts();
  const typo = await run('release', { inputs: { verison: '1.2.3', version: '1' } });
  t.is(typo.statusCode, 422, JSON.stringify(typo.body));
  t.is(typo.body.message, 'pipeline release declares no input verison (did you mean version?): it declares channel, notes, version');
  t.deepEqual(typo.body.undeclared_inputs, ['verison']);
  t.false('missing_inputs' in typo.body);
  const both = await run('release', { inputs: { verison: '1.2.3', extra: 1 } });
  t.is(both.statusCode, 422);
  t.is(
    both.body.message,
    'required input version ("the version to tag") was not given: pass it in inputs (svc pipeline run release --input NAME=VALUE); ' +
      'pipeline release declares no inputs verison (did you mean version?), extra: it declares channel, notes, version',
  );
  t.deepEqual([both.body.missing_inputs, both.body.undeclared_inputs], [['version'], ['verison', 'extra']]);
  t.deepEqual(await counts(), before);
  const open = await run('open', { inputs: { anything: 1 } });
  t.is(open.statusCode, 201);
  t.deepEqual(open.body.inputs, { anything: 1 });
});

test.serial("a triggered run missing a required input fails its event with the reason and starts nothing; an event's payload passes through", async (t) => {
  const before = await counts();
  const refused = await routed(w, (await postEvent(w, { type: 'manual.release', payload: { title: 'no version' } })).id);
  t.is(refused.status, 'failed', JSON.stringify(refused));
  t.is(
    refused.error,
    'pipeline release: required input version ("the version to tag") was not given: pass it in inputs (svc pipeline run release --input NAME=VALUE)',
  );
  t.like(refused.routing.matched[0], { kind: 'pipeline', name: 'release', error: refused.error.replace('pipeline release: ', '') });
  t.deepEqual(await counts(), before);

  const started = await routed(w, (await postEvent(w, { type: 'manual.release', payload: { version: '3.0.0', title: 'x' } })).id);
  t.is(started.status, 'completed', JSON.stringify(started));
  const runRow = (await w.owner.api.get(`/projects/${w.projectA}/runs/${started.routing.matched[0].run_id}`)).body;
  t.deepEqual(runRow.inputs, { channel: 'stable', version: '3.0.0', title: 'x' });
});

test.serial('a manifest with badly shaped declarations is refused with a 422 naming each field, and is not stored', async (t) => {
  const current = (await w.owner.api.get(`/projects/${w.projectA}/manifest`)).body.manifest_hash;
  const res = await w.owner.api.post(`/projects/${w.projectA}/manifest`, {
    yaml: `
pipelines:
  bad:
    inputs:
      version: { required: yes please, default: 1.10, describe: x }
      build.id: {}
      tag:
      release-notes: { description: [a] }
      release_notes: {}
    steps:
      - { name: go, run: echo go }
environments:
  prod: { pipeline: bad, pipeline_inputs: { verison: '1' } }
`,
  });
  t.is(res.statusCode, 422, JSON.stringify(res.body));
  t.deepEqual(res.body.errors, [
    { path: 'pipelines.bad.inputs.version.describe', message: "Unknown key 'describe' in pipelines.bad.inputs.version" },
    { path: 'pipelines.bad.inputs.version.required', message: 'required must be true or false' },
    { path: 'pipelines.bad.inputs.version.default', message: 'default must be a string, got a number: quote it, so YAML keeps it as written' },
    { path: 'pipelines.bad.inputs.build.id', message: "input name 'build.id' must start with a letter or _ and hold only letters, digits, _ and -" },
    {
      path: 'pipelines.bad.inputs.tag',
      message: "input 'tag' must be a mapping of required, default and description (write {} for an optional input), got nothing",
    },
    { path: 'pipelines.bad.inputs.release-notes.description', message: 'description must be a string, got a list' },
    {
      path: 'pipelines.bad.inputs.release_notes',
      message: "inputs 'release-notes' and 'release_notes' would both be SVC_INPUT_RELEASE_NOTES in a step: rename one",
    },
    {
      path: 'environments.prod.pipeline_inputs.verison',
      message: "pipeline 'bad' declares no input verison (did you mean version?): it declares build.id, release-notes, release_notes, tag, version",
    },
  ]);
  t.regex(res.body.message, /^invalid manifest: pipelines\.bad\.inputs\.version\.describe: Unknown key 'describe'/);
  t.is((await w.owner.api.get(`/projects/${w.projectA}/manifest`)).body.manifest_hash, current);
  const notMapping = await w.owner.api.post(`/projects/${w.projectA}/manifest`, {
    yaml: 'pipelines:\n  bad:\n    inputs: [version]\n    steps:\n      - { name: go, run: echo go }\n',
  });
  t.is(notMapping.statusCode, 422);
  t.deepEqual(notMapping.body.errors, [{ path: 'pipelines.bad.inputs', message: 'pipelines.bad.inputs must be a mapping, got a list' }]);
});
