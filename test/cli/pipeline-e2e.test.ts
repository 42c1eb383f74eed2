/**
 * End to end: `svc pipeline run | runs | logs | approve | cancel` (node dist/cli/bin.js, a subprocess) against
 * the real server on a fresh database. Steps finish by claiming and completing their jobs over the API,
 * as a worker would.
 */
import test from 'ava';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliUser, showRun, tempHome } from './helpers.ts';
import { bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

const MANIFEST = `
pipelines:
  ship:
    steps:
      - { name: build, run: make build }
      - { name: test, run: make test, depends_on: [build] }
  release:
    inputs:
      version: { required: true, description: the version to tag }
      channel: { default: stable }
    steps:
      - { name: tag, run: 'git tag v\${inputs.version}' }
  gated:
    steps:
      - { name: hold, run: echo hold, approval: true }
      - { name: go, run: echo go, depends_on: [hold] }
environments:
  staging:
    pipeline: ship
    pipeline_inputs: { tier: small, region: eu }
`;

let server: TestServer;
let home = '';
let token = '';
let project = '';

const { svc, ok, json } = cliUser(() => ({ home, url: server.url, token }));

async function api(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

const getRun = (id: string) => api('GET', `/projects/${project}/runs/${id}`);

/** What a worker does: claim the step's job, then end the attempt with success or failed. */
async function finishStep(runId: string, step: string, status: 'success' | 'failed' = 'success'): Promise<void> {
  const jobId = (await getRun(runId)).steps.find((s: { name: string }) => s.name === step).job_id;
  const { attempt } = await api('POST', `/jobs/${jobId}/claim`, {});
  const result = status === 'success' ? { status, summary: `${step} ok` } : { status, reason: `${step} broke` };
  await api('POST', `/jobs/${jobId}/attempts/${attempt.id}/complete`, { lease_token: attempt.lease_token, result });
}

/** The newest run of a pipeline once there are `count` of them (a CLI started in the background made it). */
async function newestRun(pipeline: string, count: number): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const page = await api('GET', `/projects/${project}/pipelines/${pipeline}/runs?limit=1`);
    if (page.pagination.total >= count) return page.data[0];
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no run ${count} of ${pipeline}`);
}

const lines = (text: string) => text.trimEnd().split('\n');

test.before(async () => {
  server = await startTestServer();
  token = (await bootstrapAdmin(server.server)).token;
  home = await tempHome();
  const org = (await json(['org', 'create', 'Pipelines E2E'])).id;
  project = (await json(['project', 'create', 'Web', '--org', org, '--slug', 'pipeweb'])).id;
  await writeFile(join(home, 'manifest.yaml'), MANIFEST);
  await ok(['manifest', 'sync', '--project', project, '--file', join(home, 'manifest.yaml')]);
});
test.after.always(async () => {
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

test.serial('run, logs -f while the steps run, logs of the ended run, runs', async (t) => {
  const run = await json(['pipeline', 'run', 'ship', '--project', project, '--env', 'staging', '--inputs', '{"region":"us"}', '--ref', 'main']);
  t.like(run, { pipeline_name: 'ship', status: 'pending', env_name: 'staging', ref: 'main', inputs: { tier: 'small', region: 'us' } });
  t.deepEqual(
    run.steps.map((s: { name: string; status: string }) => [s.name, s.status]),
    [
      ['build', 'pending'],
      ['test', 'pending'],
    ],
  );

  const following = svc(['pipeline', 'logs', run.id, '-f']);
  await new Promise((resolve) => setTimeout(resolve, 500));
  await finishStep(run.id, 'build');
  await finishStep(run.id, 'test');
  const followed = await following;
  t.is(followed.code, 0, showRun(['logs', '-f'], followed));
  const expected = ['run pending', '[build] running', 'run running', '[build] succeeded', '[test] running', '[test] succeeded', 'run succeeded'];
  t.deepEqual(lines(followed.stdout), expected);

  t.deepEqual(lines(await ok(['pipeline', 'logs', run.id, '--project', project])), expected, 'an ended run: its events, then the end');
  t.deepEqual(lines(await ok(['pipeline', 'logs', run.id, '--project', project, '--step', 'test'])), ['[test] running', '[test] succeeded']);
  const raw = lines(await ok(['pipeline', 'logs', run.id, '-f', '--json'])).map((l) => JSON.parse(l));
  t.like(raw[1], { event: 'step.status', data: { run_id: run.id, step_name: 'build', status: 'running' } });
  t.true(
    raw.every((e, i) => i === 0 || Number(e.id) > Number(raw[i - 1].id)),
    'ids increase',
  );

  const only = await json(['pipeline', 'run', 'ship', '--project', project, '--only', 'test']);
  t.deepEqual(only.only_steps, ['test']);
  const table = lines(await ok(['pipeline', 'runs', 'ship', '--project', project]));
  t.regex(table[0], /^ID +STATUS +REF +ENV +CREATED +COMPLETED$/);
  t.deepEqual(
    table.slice(1).map((l) => l.split(/ +/).slice(0, 2)),
    [
      [only.id, 'pending'],
      [run.id, 'succeeded'],
    ],
  );
  const done = await json(['pipeline', 'runs', 'ship', '--project', project, '--status', 'succeeded']);
  t.deepEqual(
    done.data.map((r: { id: string }) => r.id),
    [run.id],
  );

  const unknown = await svc(['pipeline', 'run', 'ship', '--project', project, '--only', 'lint']);
  t.is(unknown.code, 1);
  t.regex(unknown.stderr, /lint.*\(422\)\n$/);
  const missing = await svc(['pipeline', 'run', 'nope', '--project', project]);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /\(404\)\n$/);
});

test.serial('approve: a held step shows in logs as steps, approve releases it, a second approve is a conflict', async (t) => {
  const run = await json(['pipeline', 'run', 'gated', '--project', project]);
  const waiting = await svc(['pipeline', 'logs', run.id, '--project', project]);
  t.is(waiting.code, 0, waiting.stderr);
  t.regex(waiting.stdout, /^status: +awaiting_approval$/m);
  t.regex(waiting.stdout, /^ {2}hold +awaiting_approval +\S+ +\(approval\)$/m);
  t.is(waiting.stderr, `svc: run ${run.id} is awaiting_approval; \`svc pipeline logs ${run.id} -f\` follows its events\n`);

  const approved = await ok(['pipeline', 'approve', run.id, '--comment', 'ship it']);
  t.regex(approved, new RegExp(`^id: +${run.id}$`, 'm'));
  t.regex(approved, /^ {2}hold +pending /m);
  const again = await svc(['pipeline', 'approve', run.id]);
  t.is(again.code, 1);
  t.is(again.stderr, `svc: pipeline run ${run.id} is pending: only a run awaiting approval can be approved (409)\n`);

  const following = svc(['pipeline', 'logs', run.id, '-f', '--step', 'go']);
  await finishStep(run.id, 'hold');
  await finishStep(run.id, 'go');
  const step = await following;
  t.is(step.code, 0, step.stderr);
  t.deepEqual(lines(step.stdout), ['[go] running', '[go] succeeded']);
  t.is((await getRun(run.id)).status, 'succeeded');
});

test.serial('logs -f on a run that waits for approval says how to approve it, once, and follows it to the end', async (t) => {
  const run = await json(['pipeline', 'run', 'gated', '--project', project]);
  const following = svc(['pipeline', 'logs', run.id, '-f']);
  await ok(['pipeline', 'approve', run.id]);
  await finishStep(run.id, 'hold');
  await finishStep(run.id, 'go');
  const followed = await following;
  t.is(followed.code, 0, followed.stderr);
  t.is(followed.stderr.split('\n').filter((l) => l.includes('waits for approval')).length, 1, followed.stderr);
  t.true(followed.stderr.includes(`svc: run ${run.id} waits for approval: \`svc pipeline approve ${run.id}\` releases it\n`), followed.stderr);
});

test.serial('cancel ends the run; logs -f of it exits 1; run --wait exits 1 when a step fails', async (t) => {
  const run = await json(['pipeline', 'run', 'gated', '--project', project]);
  const cancelled = await json(['pipeline', 'cancel', run.id, '--reason', 'not today']);
  t.like(cancelled, { status: 'cancelled', cancel_reason: 'not today' });
  const again = await svc(['pipeline', 'cancel', run.id]);
  t.is(again.code, 1);
  t.is(again.stderr, `svc: pipeline run ${run.id} already ended: cancelled (409)\n`);
  const logs = await svc(['pipeline', 'logs', run.id, '-f']);
  t.is(logs.code, 1);
  t.deepEqual(lines(logs.stdout).slice(-3), ['[hold] cancelled', '[go] cancelled', 'run cancelled']);
  const gone = await svc(['pipeline', 'logs', 'prun_00000000000000000000000000', '-f']);
  t.is(gone.code, 1);
  t.regex(gone.stderr, /^svc: .*\(404\)\n$/);

  const count = (await api('GET', `/projects/${project}/pipelines/ship/runs`)).pagination.total;
  const waiting = svc(['pipeline', 'run', 'ship', '--project', project, '--wait']);
  const started = await newestRun('ship', count + 1);
  await finishStep(started.id, 'build', 'failed');
  const failed = await waiting;
  t.is(failed.code, 1, failed.stderr);
  t.regex(failed.stdout, new RegExp(`^id: +${started.id}$`, 'm'));
  t.regex(lines(failed.stdout).at(-1) ?? '', /^run failed: step build failed: /);
  t.true(failed.stdout.includes('[test] cancelled\n'), failed.stdout);
});

test.serial('a required input the run lacks: without a terminal the CLI names it and starts nothing; given, the default fills the rest', async (t) => {
  const refused = await svc(['pipeline', 'run', 'release', '--project', project]);
  t.is(refused.code, 2, showRun(['run', 'release'], refused));
  t.is(
    refused.stderr.split('\n')[0],
    'svc: pipeline release needs required input not given: version (the version to tag); pass --input version=VALUE (no terminal to ask on)',
  );
  t.is((await api('GET', `/projects/${project}/pipelines/release/runs`)).pagination.total, 0);
  const typo = await svc(['pipeline', 'run', 'release', '--project', project, '--input', 'verison=1.0']);
  t.is(typo.code, 1);
  t.regex(typo.stderr, /declares no input verison \(did you mean version\?\).*\(422\)\n$/);
  const run = await json(['pipeline', 'run', 'release', '--project', project, '--input', 'version=1.4.0']);
  t.deepEqual(run.inputs, { channel: 'stable', version: '1.4.0' });
});
