import test, { type ExecutionContext } from 'ava';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli, startFake, tempHome } from '../cli/helpers.ts';
import { claimed, claimWorld, complete, jobRow, type World } from './claim-helpers.ts';
import { assertError, memberOf, rows } from '../orgs/helpers.ts';
import { WorkflowLauncherToken } from '../../core/ports/launchers.ts';

const MANIFEST = `
workflows:
  single:
    db_access: read_only
    with_apis: [billing]
    hints: { worker_type: node-worker }
    env_overrides: { LOG_LEVEL: info }
    steps:
      - name: only
        agent: { name: reviewer, harness: harness_a }
        env_overrides: { MODE: fast }
  ship:
    resource_refs: none
    env_overrides: { LOG_LEVEL: info, REGION: eu }
    steps:
      - name: build
        run: npm run build
        env_overrides: { REGION: us }
      - name: test
        script: { run: npm test }
        depends_on: [build]
      - name: docs
        action: { type: notify }
        if: inputs.env == 'prod'
        with_apis: [billing]
        resource_refs: [handbook]
      - name: deploy
        agent: { name: deployer, harness_profile: fast }
        depends_on: [test, docs]
        if: steps.test.status == 'succeeded'
  gated:
    steps:
      - { name: one, run: echo one, if: inputs.go == true }
  pair:
    steps:
      - { name: a, run: echo a, if: inputs.go }
      - { name: b, run: echo b, if: inputs.go, depends_on: [a] }
  on-event:
    steps:
      - { name: first, run: echo first, if: "event.branch == 'main'" }
      - { name: later, run: echo later, depends_on: [first], if: "steps.first.status == 'succeeded' && event.branch == 'main'" }
x-svc:
  api_spec: { billing: billing API }
  agents:
    version: 1
    profiles:
      fast: [{ harness: harness_b }]
`;

let w: World;
test.before(async () => {
  w = await claimWorld('wfinv');
  const sync = await w.owner.api.post(`/projects/${w.projectA}/manifest`, { yaml: MANIFEST });
  if (sync.statusCode !== 200) throw new Error(`sync: ${sync.statusCode} ${JSON.stringify(sync.body)}`);
});
test.after.always(async () => {
  await w?.ctx.srv.stop();
});

const invoke = (name: string, body: unknown = {}, query = '', user = w.owner, project = w.projectA) =>
  user.api.post(`/projects/${project}/workflows/${name}/invoke${query}`, body);

const jobCount = async () => Number(((await w.db('jobs').count({ n: '*' }).first()) as { n: unknown }).n);

async function run(t: ExecutionContext, jobId: string, status: 'success' | 'failed', extra: Record<string, unknown> = {}) {
  const { attempt } = await claimed(t, w, jobId);
  const res = await complete(w, jobId, attempt, { status, summary: status }, extra);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
}

test.serial('a single-step workflow is one root job carrying its step', async (t) => {
  const res = await invoke('single', { input: { ticket: 42 }, hints: { 'x-priority-note': 'x' } });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body).sort(), ['job_id', 'project_id', 'status']);
  t.is(res.body.status, 'ready');
  t.is(res.body.project_id, w.projectA);
  const root = await jobRow(w, res.body.job_id);
  t.is(root.title, 'workflow single');
  t.deepEqual(root.labels, ['workflow:single']);
  t.is(root.depth, 0);
  t.is(root.child_count, 0);
  t.is(root.hints.workflow_name, 'single');
  t.is(root.hints.request_json, '{"ticket":42}');
  t.deepEqual(root.hints.app_apis, ['billing']);
  t.is(root.hints.db_access, 'read_only');
  t.is(root.hints.timeout_seconds, 1800);
  t.is(root.hints.worker_type, 'node-worker');
  t.is(root.hints['x-priority-note'], 'x', 'a custom hint is kept as sent');
  t.is(root.hints.step_name, 'only');
  t.deepEqual(root.hints.step, { kind: 'agent', agent: { name: 'reviewer', harness: 'harness_a' } });
  t.is(root.hints.resource_refs, 'inherit');
  t.deepEqual(root.harness, { harness: 'harness_a' });
  t.deepEqual(root.env_overrides, { LOG_LEVEL: 'info', MODE: 'fast' });
});

test.serial('a multi-step workflow: root, one child per step, blocked_by from depends_on, skipped step closed', async (t) => {
  const res = await invoke('ship', { input: { env: 'staging' }, env_overrides: { REGION: 'ap' } });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  const rootId = res.body.job_id;
  t.is(res.body.status, 'ready');
  t.deepEqual(res.body.step_jobs, [
    { job_id: `${rootId}.1`, step_name: 'build' },
    { job_id: `${rootId}.2`, step_name: 'test', depends_on: ['build'] },
    { job_id: `${rootId}.3`, step_name: 'docs' },
    { job_id: `${rootId}.4`, step_name: 'deploy', depends_on: ['test', 'docs'] },
  ]);
  const root = await jobRow(w, rootId);
  t.is(root.child_count, 4);
  t.deepEqual(root.labels, ['workflow:ship']);
  t.is(root.hints.request_json, '{"env":"staging"}');
  t.is(root.hints.step, undefined);
  t.is(root.env_overrides, null);
  const [build, tst, docs, deploy] = await Promise.all([1, 2, 3, 4].map((n) => jobRow(w, `${rootId}.${n}`)));
  t.is(build.title, 'build');
  t.deepEqual(build.labels, ['workflow:ship', 'step:build']);
  t.is(build.parent_id, rootId);
  t.is(build.depth, 1);
  t.is(build.hints.workflow_name, 'ship');
  t.is(build.hints.step_name, 'build');
  t.is(build.hints.request_json, '{"env":"staging"}');
  t.deepEqual(build.hints.step, { kind: 'script', script: { run: 'npm run build' } });
  t.is(build.hints.resource_refs, 'none');
  t.deepEqual(build.env_overrides, { LOG_LEVEL: 'info', REGION: 'ap' }, 'workflow under step under caller');
  t.deepEqual(tst.hints.step, { kind: 'script', script: { run: 'npm test' } });
  t.is(docs.phase, 'cancelled');
  t.is(docs.close_reason, 'skipped');
  t.deepEqual(docs.hints.app_apis, ['billing']);
  t.deepEqual(docs.hints.resource_refs, ['handbook']);
  t.deepEqual(docs.hints.step, { kind: 'action', action: { type: 'notify' } });
  t.is(deploy.phase, 'ready');
  t.deepEqual(deploy.hints.step, { kind: 'agent', agent: { name: 'deployer', harness_profile: 'fast' }, if: "steps.test.status == 'succeeded'" });
  t.deepEqual(deploy.harness, { harness_profile: 'fast' });
  const relations = await w
    .db('job_relations')
    .whereIn('job_id', [build.id, tst.id, docs.id, deploy.id])
    .orderBy(['job_id', 'related_job_id'])
    .select('job_id', 'related_job_id', 'relation_type');
  t.deepEqual(relations, [
    { job_id: tst.id, related_job_id: build.id, relation_type: 'blocked_by' },
    { job_id: deploy.id, related_job_id: tst.id, relation_type: 'blocked_by' },
    { job_id: deploy.id, related_job_id: docs.id, relation_type: 'blocked_by' },
  ]);
  const listed = await w.owner.api.get(`/projects/${w.projectA}/jobs?label=workflow:ship&parent_id=${rootId}&limit=10`);
  t.is(listed.body.pagination.total, 4);

  // The root is never claimed; steps run in order; the skipped step counts as complete.
  t.is((await w.owner.api.post(`/jobs/${rootId}/claim`, {})).statusCode, 409);
  t.is((await w.owner.api.post(`/jobs/${deploy.id}/claim`, {})).statusCode, 409, 'deploy waits for test');
  await run(t, build.id, 'success');
  await run(t, tst.id, 'success');
  t.is((await jobRow(w, rootId)).phase, 'ready');
  await run(t, deploy.id, 'success');
  t.is((await jobRow(w, rootId)).phase, 'done');
});

test.serial('an if over inputs that holds creates the step ready', async (t) => {
  const res = await invoke('ship', { input: { env: 'prod' } });
  t.is(res.statusCode, 201);
  const docs = await jobRow(w, `${res.body.job_id}.3`);
  t.is(docs.phase, 'ready');
  t.is(docs.close_reason, null);
});

test.serial('skips decided at invoke time: a skipped single step closes the root; all steps skipped: the root is done', async (t) => {
  const one = await invoke('gated', { input: { go: false } });
  t.is(one.statusCode, 201);
  t.is(one.body.status, 'cancelled');
  t.is((await jobRow(w, one.body.job_id)).close_reason, 'skipped');
  t.is((await invoke('gated', { input: { go: true } })).body.status, 'ready');
  const pair = await invoke('pair', {}, '?wait=true&wait_seconds=5');
  t.is(pair.statusCode, 200, JSON.stringify(pair.body));
  t.is(pair.body.status, 'done');
  t.deepEqual(pair.body.result_json, { a: null, b: null });
  for (const s of pair.body.step_jobs) t.is((await jobRow(w, s.job_id)).close_reason, 'skipped');
});

test.serial('a failed step cancels the root and the steps waiting for it', async (t) => {
  const res = await invoke('ship', { input: { env: 'prod' } });
  const rootId = res.body.job_id;
  await run(t, `${rootId}.1`, 'failed');
  const root = await jobRow(w, rootId);
  t.is(root.phase, 'cancelled');
  t.regex(root.close_reason, new RegExp(`^step ${rootId}\\.1 did not complete`));
  t.is((await jobRow(w, `${rootId}.2`)).phase, 'cancelled');
  t.is((await jobRow(w, `${rootId}.4`)).phase, 'cancelled');
  t.is((await jobRow(w, `${rootId}.3`)).phase, 'ready', 'docs does not wait for build');
});

test.serial('wait=true answers 200 with result_json when the workflow finishes in time', async (t) => {
  const before = await jobCount();
  const waiting = invoke('single', { input: { q: 1 } }, '?wait=true&wait_seconds=20');
  // The job appears, is claimed and completed while the invoke waits.
  let jobId: string | undefined;
  for (let i = 0; i < 100 && !jobId; i++) {
    if ((await jobCount()) > before)
      jobId = (
        await w
          .db('jobs')
          .where('hints', '@>', JSON.stringify({ request_json: '{"q":1}' }))
          .first('id')
      )?.id;
    if (!jobId) await new Promise((r) => setTimeout(r, 50));
  }
  t.truthy(jobId);
  await run(t, jobId!, 'success', { result_json: { answer: 42 } });
  const res = await waiting;
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.is(res.body.job_id, jobId);
  t.is(res.body.status, 'done');
  t.like(res.body.result_json, { answer: 42 });
  const attempt = await w.db('job_attempts').where({ job_id: jobId }).first('result_json');
  t.deepEqual(res.body.result_json, attempt.result_json);
});

test.serial('wait=true on a multi-step workflow maps step names to results', async (t) => {
  const waiting = invoke('ship', { input: { env: 'x', tag: 'multi' } }, '?wait=true&wait_seconds=20');
  let rootId: string | undefined;
  for (let i = 0; i < 100 && !rootId; i++) {
    rootId = (
      await w
        .db('jobs')
        .where('hints', '@>', JSON.stringify({ request_json: '{"env":"x","tag":"multi"}' }))
        .where({ depth: 0 })
        .first('id')
    )?.id;
    if (!rootId) await new Promise((r) => setTimeout(r, 50));
  }
  t.truthy(rootId);
  for (const n of [1, 2, 4]) await run(t, `${rootId}.${n}`, 'success');
  const res = await waiting;
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.is(res.body.status, 'done');
  t.deepEqual(Object.keys(res.body.result_json).sort(), ['build', 'deploy', 'docs', 'test']);
  t.is(res.body.result_json.docs, null, 'skipped: no attempt');
  t.is(res.body.step_jobs.length, 4);
});

test.serial('wait=true answers 202 with the current status when time runs out', async (t) => {
  const started = Date.now();
  const res = await invoke('single', {}, '?wait=true&wait_seconds=1');
  t.is(res.statusCode, 202, JSON.stringify(res.body));
  t.true(Date.now() - started >= 900);
  t.is(res.body.status, 'ready');
  t.false('result_json' in res.body);
  t.is((await jobRow(w, res.body.job_id)).hints.request_json, '{}');
});

test.serial('unknown workflow and missing manifest: 404; nothing written', async (t) => {
  const before = await jobCount();
  assertError(t, await invoke('nope'), 404, "workflow nope not found in the project's manifest");
  assertError(t, await invoke('single', {}, '', w.owner, w.projectA2), 404, `project ${w.projectA2} has no synced manifest`);
  t.is(await jobCount(), before);
});

test.serial('bad bodies: 400; nothing written', async (t) => {
  const before = await jobCount();
  t.is((await invoke('single', { input: 'text' })).statusCode, 400);
  t.is((await invoke('single', { input: {}, extra: 1 })).statusCode, 400);
  t.is((await invoke('single', { env_overrides: { lower: 'x' } })).statusCode, 400);
  t.is((await invoke('single', { hints: { timeout_seconds: -1 } })).statusCode, 400);
  t.is((await invoke('single', {}, '?wait_seconds=61')).statusCode, 400);
  assertError(t, await invoke('ship', { env_overrides: { PATH: '/x' } }), 400, /env_overrides\.PATH: Invalid env override 'PATH': reserved variable/);
  assertError(t, await invoke('single', { env_overrides: { BIG: 'x'.repeat(4090) } }), 400, /over the 4 KB limit/);
  t.is(await jobCount(), before);
});

test.serial('env_overrides from the caller need jobs:harness_override; outsiders get 404/403', async (t) => {
  const orgId = (await w.db('projects').where({ id: w.projectA }).first('org_id')).org_id;
  const member = await memberOf(w.ctx, orgId, 'wf-member');
  const before = await jobCount();
  assertError(t, await invoke('single', { env_overrides: { DEBUG: '1' } }, '', member), 403, 'missing permission jobs:harness_override (env_overrides)');
  t.is(await jobCount(), before);
  const ok = await invoke('single', { input: {} }, '', member);
  t.is(ok.statusCode, 201, 'members invoke workflows');
  t.is(await rows(w.ctx, 'jobs', { id: ok.body.job_id }), 1);
  const outsider = await invoke('single', {}, '', w.outsider);
  t.true([403, 404].includes(outsider.statusCode));
});

test.serial('a body may be omitted', async (t) => {
  const res = await w.owner.api.post(`/projects/${w.projectA}/workflows/single/invoke`);
  t.is(res.statusCode, 201, JSON.stringify(res.body));
});

test.serial('a trigger invokes through the WorkflowLauncher port: the event payload feeds if conditions, now and later', async (t) => {
  const launcher = w.ctx.srv.server.app.container.resolve(WorkflowLauncherToken);
  const event = { id: 'evt_01h455vb4pex5vsknk084sn02q', type: 'vcshost.push', payload: { branch: 'main' } };
  const { job_id } = await launcher.invokeWorkflow({ id: 'system' }, w.projectA, 'on-event', { sha: 'abc' }, event);
  const root = await jobRow(w, job_id);
  t.like(root.hints, { workflow_name: 'on-event', request_json: '{"sha":"abc"}', event_id: event.id, event_json: '{"branch":"main"}' });
  t.is(root.created_by, 'system');
  const [first, later] = await w.db('jobs').where({ parent_id: job_id }).orderBy('id');
  t.is(first.phase, 'ready', 'event.branch is main: runs');
  await run(t, first.id, 'success');
  t.is((await jobRow(w, later.id)).phase, 'ready', 'decided later with the same event');

  const other = await launcher.invokeWorkflow({ id: 'system' }, w.projectA, 'on-event', {}, { ...event, payload: { branch: 'dev' } });
  const steps = await w.db('jobs').where({ parent_id: other.job_id }).orderBy('id');
  t.deepEqual(
    steps.map((s: any) => [s.phase, s.close_reason]),
    [
      ['cancelled', 'skipped'],
      ['cancelled', 'skipped'],
    ],
  );
  t.is((await jobRow(w, other.job_id)).phase, 'done');
  await t.throwsAsync(launcher.invokeWorkflow({ id: 'system' }, w.projectA, 'gone', {}), { message: "workflow gone not found in the project's manifest" });
});

test.serial('cli: svc workflow invoke NAME [--input JSON | --input-file F] [--wait] [--json]', async (t) => {
  const home = await tempHome();
  const fake = await startFake();
  try {
    const created = {
      job_id: 'wfinv-0000000a',
      project_id: 'proj_1',
      status: 'ready',
      step_jobs: [
        { job_id: 'wfinv-0000000a.1', step_name: 'a' },
        { job_id: 'wfinv-0000000a.2', step_name: 'b', depends_on: ['a'] },
      ],
    };
    fake.on('POST', '/projects/proj_1/workflows/ship/invoke', () => ({ status: 201, body: created }));
    // The run moves on at each poll: a then b then the root finish.
    let polls = 0;
    const phases: Record<string, string[]> = {
      'wfinv-0000000a': ['active', 'active', 'done'],
      'wfinv-0000000a.1': ['active', 'done', 'done'],
      'wfinv-0000000a.2': ['ready', 'active', 'done'],
    };
    for (const [id, list] of Object.entries(phases)) {
      fake.on('GET', `/jobs/${id}`, () => ({ body: { id, phase: list[Math.min(Math.floor(polls++ / 3), 2)] } }));
      const attempts = id.endsWith('.1') ? [{ attempt_number: 1, result_json: { ok: true } }] : [];
      fake.on('GET', `/projects/proj_1/jobs/${id}/attempts`, { body: { data: attempts } });
    }
    const cli = (args: string[]) => runCli(home, ['--project', 'proj_1', 'workflow', 'invoke', ...args], { SVC_API_URL: fake.url, SVC_TOKEN: 'tok' });
    const plain = await cli(['ship', '--input', '{"env":"prod"}']);
    t.is(plain.code, 0, plain.stderr);
    t.deepEqual(fake.requests.at(-1)!.body, { input: { env: 'prod' } });
    t.regex(plain.stdout, /job_id: +wfinv-0000000a/);
    t.regex(plain.stdout, /b: wfinv-0000000a\.2 +\(after a\)/);
    const file = join(home, 'input.json');
    await writeFile(file, '{"n": 1}');
    const waited = await cli(['ship', '--input-file', file, '--wait', '--json']);
    t.is(waited.code, 0, waited.stderr);
    const invoked = fake.requests.find((r) => r.method === 'POST' && (r.body as { input?: { n?: number } } | undefined)?.input?.n === 1)!;
    t.deepEqual(invoked.body, { input: { n: 1 } });
    t.like(JSON.parse(waited.stdout), { status: 'done', result_json: { a: { ok: true }, b: null } });
    t.is(waited.stderr, '[run] active\n[a] active\n[b] ready\n[a] done\n[b] active\n[run] done\n[b] done\n', 'progress as it happens, on stderr');
    t.is((await cli(['ship', '--input', '[1]'])).code, 2);
    t.is((await cli(['ship', '--input', 'nope'])).code, 2);
    t.is((await cli(['ship', '--input', '{}', '--input-file', file])).code, 2);
  } finally {
    await fake.stop();
  }
});

test.serial("the run's resource_refs: the root holds them, each step takes them per its policy (inherit, none, names)", async (t) => {
  const refs = [
    { uri: 'org_docs:/guides/handbook.md@v2', label: 'handbook', required: true },
    { uri: 'org_docs:/notes.md', required: false },
  ];
  const ship = await invoke('ship', { input: { env: 'prod' }, resource_refs: refs });
  t.is(ship.statusCode, 201, JSON.stringify(ship.body));
  const rootId = ship.body.job_id;
  const [root, build, docs] = await Promise.all([rootId, `${rootId}.1`, `${rootId}.3`].map((id) => jobRow(w, id)));
  t.deepEqual(root.resource_refs, refs);
  t.deepEqual(build.resource_refs, [], 'the workflow says none');
  t.deepEqual(docs.resource_refs, [refs[0]], 'the step names it by label');

  const single = await invoke('single', { resource_refs: refs });
  t.deepEqual((await jobRow(w, single.body.job_id)).resource_refs, refs, 'inherit takes them all');

  const bad = await invoke('single', { resource_refs: [{ uri: 'http://example.com/x' }] });
  t.is(bad.statusCode, 400);
  t.regex(bad.body.message, /resource_refs\[0\]\.uri/);
});
