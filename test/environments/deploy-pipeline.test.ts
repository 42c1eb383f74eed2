/**
 * A Deploy request to an environment that names a `pipeline`: the deploy goes through that pipeline
 * (recorded with status `pipeline` and the run's id, the release in the run's inputs over the
 * environment's pipeline_inputs) unless `direct`; `svc env deploy … --follow` follows the run to its end.
 */
import { execFileSync } from 'node:child_process';
import { rm } from 'node:fs/promises';
import test from 'ava';
import { DeployerToken } from '../../core/ports/environments.ts';
import { ReleasesToken } from '../../core/ports/releases.ts';
import { FakeReleases, RecordingDeployer } from '../fixtures/deployer.ts';
import { cliUser, showRun, tempHome } from '../cli/helpers.ts';
import { attemptsOf, logLines, syncManifest, until, workerWorld, type WorkerWorld } from '../worker/helpers.ts';
import { as, userInOrg } from '../support/server.ts';

const MANIFEST = `
services:
  web:
    image: example/web
environments:
  staging:
    type: persistent
    pipeline: promote
    pipeline_inputs: { region: eu }
  production:
    pipeline: promote-prod
    protection:
      required_reviewers: [{ user: pipeline-reviewer@example.com }]
pipelines:
  promote-prod:
    steps:
      - { name: deploy, action: { type: deploy, with: { env_name: production } } }
  promote:
    steps:
      - { name: deploy, action: { type: deploy, with: { env_name: staging } } }
      - { name: say, action: { type: run, with: { command: 'echo promoted \${inputs.release_tag} in \${inputs.region}' } }, depends_on: [deploy] }
  preview:
    steps:
      - { name: deploy, action: { type: deploy, with: { env_name: 'pr-\${inputs.number}' } } }
`;

let w: WorkerWorld;
let home = '';
const deployer = new RecordingDeployer();
const releases = new FakeReleases();
const { svc } = cliUser(() => ({ home, url: w.srv.url, token: w.token }));
const base = () => `/projects/${w.projectId}/environments/staging`;

test.before(async () => {
  w = await workerWorld('envpipe', {
    configure: (c) => {
      c.registerInstance(DeployerToken, deployer);
      c.registerInstance(ReleasesToken, releases);
    },
  });
  await syncManifest(w, MANIFEST);
  home = await tempHome();
  // The releases name the repository's one commit: the run checks it out for its `run` step.
  const head = execFileSync('git', ['--git-dir', w.bare, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  releases.add(w.projectId, { id: 'rel_p1', tag: 'v1', git_sha: head, manifest_hash: null, image_digests: { web: 'sha256:' + '1'.repeat(64) } });
  releases.add(w.projectId, { id: 'rel_p2', tag: 'v2', git_sha: head, manifest_hash: null, image_digests: { web: 'sha256:' + '2'.repeat(64) } });
  releases.add(w.projectId, { id: 'rel_p3', tag: 'v3', git_sha: head, manifest_hash: null, image_digests: { web: 'sha256:' + '3'.repeat(64) } });
});
test.after.always(async () => {
  await w?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

const ended = (runId: string) =>
  until(async () => {
    const r = (await w.api.get(`/projects/${w.projectId}/runs/${runId}`)).body;
    return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : null;
  }, 'the run to end');

test.serial('a deploy to an environment with a pipeline runs that pipeline with the release in its inputs; its deploy step deploys it', async (t) => {
  const res = await w.api.post(`${base()}/deploy`, { release_tag: 'v1' });
  t.is(res.statusCode, 202, JSON.stringify(res.body));
  t.like(res.body, { status: 'pipeline', direct: false, release: { id: 'rel_p1', tag: 'v1' } });
  t.truthy(res.body.pipeline_run_id);
  const run = await ended(res.body.pipeline_run_id);
  t.is(run.status, 'succeeded', JSON.stringify(run));
  t.like(run, { pipeline_name: 'promote' });
  const sayJob = run.steps.find((s: any) => s.name === 'say').job_id;
  const lines = await logLines(w, sayJob, (await attemptsOf(w, sayJob))[0].id);
  t.true(
    lines.some((l: any) => l.line === 'promoted v1 in eu'),
    lines.map((l: any) => l.line).join('\n'),
  );
  const deployJob = run.steps.find((s: any) => s.name === 'deploy').job_id;
  const deployLines = (await logLines(w, deployJob, (await attemptsOf(w, deployJob))[0].id)).map((l: any) => l.line);
  t.true(deployLines.includes(`web: starting sha256:${'1'.repeat(64)}`), `the deployer's lines are in the step's log too: ${deployLines.join('\n')}`);
  const carried = (await w.api.get(`${base()}/deploys/${res.body.id}/logs`)).body.data;
  t.deepEqual(
    carried.map((l: any) => l.line),
    [
      `deploying release v1 (rel_p1, git ${run.git_sha.slice(0, 12)}) to environment staging through pipeline promote: run ${run.id} (its deploy step's deploy has its own log)`,
    ],
  );
  t.like((await w.api.get(base())).body, { current_release: { tag: 'v1' } });
  t.deepEqual(deployer.calls, ['deploy staging v1']);
  const history = (await w.api.get(`${base()}/deploys`)).body.data;
  t.deepEqual(
    history.map((d: any) => [d.status, d.direct, d.release.tag]),
    [
      ['succeeded', true, 'v1'],
      ['pipeline', false, 'v1'],
    ],
  );
});

test.serial('direct: true bypasses the pipeline', async (t) => {
  const res = await w.api.post(`${base()}/deploy`, { release_tag: 'v2', direct: true });
  t.is(res.statusCode, 202, JSON.stringify(res.body));
  t.like(res.body, { status: 'running', direct: true, pipeline_run_id: null });
  await until(async () => ((await w.api.get(base())).body.current_release?.tag === 'v2' ? true : null), 'v2 to serve');
  t.is(deployer.calls.at(-1), 'deploy staging v2');
});

test.serial('svc env deploy --follow follows the pipeline run until it ends, and exits 0 when it succeeded', async (t) => {
  const r = await svc(['env', 'deploy', 'staging', '--release-tag', 'v3', '--project', w.projectId, '--follow']);
  t.is(r.code, 0, showRun(['env', 'deploy', 'staging', '--release-tag', 'v3', '--follow'], r));
  t.regex(r.stdout, /deploy/);
  t.regex(r.stdout, /succeeded/);
  t.like((await w.api.get(base())).body, { current_release: { tag: 'v3' } });
});

test.serial('an environment ensured through the API with a pipeline deploys through it too, its own pipeline_inputs the base of the inputs', async (t) => {
  const made = await w.api.post(`/projects/${w.projectId}/environments`, {
    name: 'pr-1',
    kind: 'preview',
    pipeline: 'preview',
    pipeline_inputs: { number: 1, region: 'us' },
  });
  t.is(made.statusCode, 201, JSON.stringify(made.body));
  const res = await w.api.post(`/projects/${w.projectId}/environments/pr-1/deploy`, { release_tag: 'v2', inputs: { region: 'ap' } });
  t.is(res.statusCode, 202, JSON.stringify(res.body));
  t.like(res.body, { status: 'pipeline', direct: false });
  const run = await ended(res.body.pipeline_run_id);
  t.is(run.status, 'succeeded', JSON.stringify(run));
  t.like(run, { env_name: 'pr-1', inputs: { number: 1, region: 'ap', release_tag: 'v2' } });
  t.like((await w.api.get(`/projects/${w.projectId}/environments/pr-1`)).body, { current_release: { tag: 'v2' } });
  t.is(deployer.calls.at(-1), 'deploy pr-1 v2');
});

test.serial(
  'protected: a deploy through the pipeline awaits approval; approved, the pipeline runs and its deploy step is not held again; a run started by hand is',
  async (t) => {
    const reviewer = as(w.srv.server, await userInOrg(w.srv.server, w.token, w.orgId, 'pipeline-reviewer@example.com', 'admin'));
    const prod = `/projects/${w.projectId}/environments/production`;
    const held = await w.api.post(`${prod}/deploy`, { release_tag: 'v3', inputs: { note: 'x' } });
    t.like(held.body, { status: 'awaiting_approval', direct: false, pipeline_run_id: null, pipeline_request: { inputs: { note: 'x' }, image_tag: null } });
    const approved = await reviewer.post(`${prod}/deploys/${held.body.id}/approve`, {});
    t.is(approved.statusCode, 200, JSON.stringify(approved.body));
    t.like(approved.body, { status: 'pipeline' });
    t.truthy(approved.body.pipeline_run_id);
    const run = await ended(approved.body.pipeline_run_id);
    t.is(run.status, 'succeeded', JSON.stringify(run));
    t.like((await w.api.get(prod)).body, { current_release: { tag: 'v3' } });
    t.is(deployer.calls.at(-1), 'deploy production v3');

    const byHand = await w.api.post(`/projects/${w.projectId}/pipelines/promote-prod/run`, { inputs: { release_tag: 'v2' } });
    t.true([200, 201, 202].includes(byHand.statusCode), JSON.stringify(byHand.body));
    const handRun = await ended(byHand.body.run_id ?? byHand.body.id);
    t.is(handRun.status, 'failed');
    t.is(deployer.calls.at(-1), 'deploy production v3', 'nothing deployed without approval');
    const waiting = (await w.api.get(`${prod}/deploys?status=awaiting_approval`)).body.data;
    t.is(waiting.length, 1);
    t.like(waiting[0], { direct: true, release: { tag: 'v2' } });

    // A run started by hand naming the approved deploy as its input is not that deploy's run: held too.
    const copied = await w.api.post(`/projects/${w.projectId}/pipelines/promote-prod/run`, { inputs: { release_tag: 'v3', deploy_id: held.body.id } });
    t.true([200, 201, 202].includes(copied.statusCode), JSON.stringify(copied.body));
    t.is((await ended(copied.body.run_id ?? copied.body.id)).status, 'failed');
    t.is(deployer.calls.at(-1), 'deploy production v3');
    t.is(deployer.calls.filter((c) => c === 'deploy production v3').length, 1, 'the approved deploy ran once, by its own run');
    t.is((await w.api.get(`${prod}/deploys?status=awaiting_approval`)).body.data.length, 2);
  },
);
