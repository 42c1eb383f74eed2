import test from 'ava';
import { SseParser, type SseEvent } from '../../cli/sse.ts';
import { attemptsOf, logLines, readStream, syncManifest, until, workerWorld, type WorkerWorld } from './helpers.ts';

const MANIFEST = `
pipelines:
  ship:
    steps:
      - { name: build, run: "echo building; echo built" }
      - { name: test, run: "echo testing", depends_on: [build] }
  slow:
    steps:
      - { name: tick, run: "echo first; sleep 1.5; echo second" }
  tagged:
    inputs:
      version: { default: '1.10', description: the version to tag }
      channel: { required: true }
    steps:
      - { name: tag, action: { type: run, with: { command: 'echo "tag v\${inputs.version} on \${inputs.channel}, $SVC_INPUT_VERSION"' } } }
  deploy:
    steps:
      - { name: push, action: { type: job, with: { service: api, env_name: staging } } }
services:
  api: { image: example/api, command: [migrate] }
environments:
  staging: { type: persistent }
`;

// Serial: the runs of concurrent tests would queue for the same worker's slots, so each test's wait would also hold the others' steps.
let w: WorkerWorld;
test.before(async () => {
  w = await workerWorld('pipee2e');
  await syncManifest(w, MANIFEST);
});
test.after.always(() => w?.stop());

const runOf = async (runId: string) => (await w.api.get(`/projects/${w.projectId}/runs/${runId}`)).body;

test.serial('a pipeline run executes its script steps in order and its stream carries their step.log lines', async (t) => {
  const started = await w.api.post(`/projects/${w.projectId}/pipelines/ship/run`, {});
  t.is(started.statusCode, 201);
  const run = await until(async () => {
    const r = await runOf(started.body.id);
    return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : null;
  }, 'the run to end');
  t.is(run.status, 'succeeded');
  const stream = await readStream(w, `/pipeline-runs/${run.id}/stream`);
  const logs = stream.events.filter((e) => e.event === 'step.log').map((e) => JSON.parse(e.data));
  const stepLines = (step: string) => logs.filter((l) => l.step_name === step).map((l) => l.line);
  t.deepEqual(
    stepLines('build').filter((l) => !l.startsWith('$') && !/^(workspace|checked out|started|process ended|step build|nothing to push|diff against)/.test(l)),
    ['building', 'built'],
  );
  t.true(stepLines('test').includes('testing'));
  const build = run.steps.find((s: any) => s.name === 'build');
  t.true(logs.filter((l) => l.step_name === 'build').every((l) => l.job_id === build.job_id && typeof l.at === 'string'));
  const order = stream.events.map((e) => `${e.event}:${JSON.parse(e.data).step_name ?? ''}:${JSON.parse(e.data).status ?? ''}`);
  t.true(order.indexOf('step.status:build:succeeded') < order.indexOf('step.status:test:running'), 'test ran after build');
  const [attempt] = await attemptsOf(w, build.job_id);
  t.is(attempt.result_status, 'success');
});

test.serial('a running attempt streams each line as it is appended, without waiting for the end', async (t) => {
  const started = await w.api.post(`/projects/${w.projectId}/pipelines/slow/run`, {});
  const jobId = started.body.steps[0].job_id;
  const attempt = await until(async () => (await attemptsOf(w, jobId))[0], 'the attempt to start');
  const res = await fetch(`${w.srv.url}/jobs/${jobId}/attempts/${attempt.id}/logs/stream`, {
    headers: { authorization: `Bearer ${w.token}` },
    signal: AbortSignal.timeout(20_000),
  });
  const parser = new SseParser();
  const seen: { event: SseEvent; at: number }[] = [];
  for await (const chunk of res.body ?? []) for (const event of parser.feed(chunk)) seen.push({ event, at: Date.now() });
  const at = (line: string) => seen.find((s) => s.event.event === 'log' && JSON.parse(s.event.data).line === line)!.at;
  t.true(at('second') - at('first') >= 1000, 'the first line arrived while the script slept');
  t.is(seen.at(-1)!.event.event, 'end');
  t.true(seen.at(-1)!.at - at('second') < 5000, 'the end of the attempt ends the stream (no keep-alive wait)');
});

test.serial('an action step fails with a plain reason, and the run fails', async (t) => {
  // A job step needs a release in the environment, and a deployer that runs containers: none refuses it.
  const hash = (await w.api.get(`/projects/${w.projectId}/manifest`)).body.manifest_hash;
  const deployed = await w.api.post(`/projects/${w.projectId}/environments/staging/deploy`, {
    git_sha: 'a'.repeat(40),
    manifest_hash: hash,
    image_digests: { api: `sha256:${'1'.repeat(64)}` },
    direct: true,
  });
  t.is(deployed.statusCode, 202, JSON.stringify(deployed.body));
  await until(async () => (await w.api.get(`/projects/${w.projectId}/environments/staging`)).body.current_release, 'the release to be current');
  const started = await w.api.post(`/projects/${w.projectId}/pipelines/deploy/run`, {});
  const run = await until(async () => {
    const r = await runOf(started.body.id);
    return r.status === 'failed' ? r : null;
  }, 'the run to fail');
  const [attempt] = await attemptsOf(w, run.steps[0].job_id);
  t.like(attempt, {
    status: 'failed',
    error: 'action job: adapters.deployer none cannot run one-off jobs of a service (configure the docker or kubernetes deployer)',
  });
});

test.serial("a declared default fills a step's \${inputs.x} and its SVC_INPUT_X; a run missing a required input never starts", async (t) => {
  const refused = await w.api.post(`/projects/${w.projectId}/pipelines/tagged/run`, {});
  t.is(refused.statusCode, 422, JSON.stringify(refused.body));
  t.deepEqual(refused.body.missing_inputs, ['channel']);
  const started = await w.api.post(`/projects/${w.projectId}/pipelines/tagged/run`, { inputs: { channel: 'beta' } });
  t.is(started.statusCode, 201, JSON.stringify(started.body));
  const run = await until(async () => {
    const r = await runOf(started.body.id);
    return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : null;
  }, 'the run to end');
  t.is(run.status, 'succeeded', JSON.stringify(run));
  const [attempt] = await attemptsOf(w, run.steps[0].job_id);
  const lines = (await logLines(w, run.steps[0].job_id, attempt.id)).map((l) => l.line);
  t.true(lines.includes('tag v1.10 on beta, 1.10'), lines.join('\n'));
});
