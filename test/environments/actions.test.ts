import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { DeployerToken } from '../../core/ports/environments.ts';
import { RecordingDeployer, FakeReleases } from '../fixtures/deployer.ts';
import { ReleasesToken } from '../../core/ports/releases.ts';
import { fakeChatApp, fakeCodeHost, type FakeHost } from '../support/fake-hosts.ts';
import { attemptsOf, finished, git, syncManifest, until, workerWorld, type WorkerWorld } from '../worker/helpers.ts';
import { example, sha } from './helpers.ts';

const PIPELINES = `
pipelines:
  preview:
    steps:
      - { name: env, action: { type: env-ensure, with: { env_name: 'pr-\${inputs.number}', kind: preview } } }
      - { name: deploy, action: { type: deploy, with: { env_name: 'pr-\${inputs.number}' } }, depends_on: [env] }
      - { name: check, action: { type: run, with: { command: 'echo deployed \${inputs.number}' } }, depends_on: [deploy] }
      - { name: tell, action: { type: notify, with: { channel: C0DEPLOYS, message: 'pr-\${inputs.number} is up' } }, depends_on: [deploy] }
  cleanup:
    steps:
      - { name: remove, action: { type: env-delete, with: { env_name: 'pr-\${inputs.number}' } } }
  pr:
    steps:
      - { name: open, action: { type: create-pr, with: { title: 'Bump', body: 'from svc', branch: feature } } }
  migrate:
    steps:
      - { name: migrate, action: { type: job, with: { service: web, env_name: 'pr-\${inputs.number}', command: 'migrate --up' } } }
`;

let w: WorkerWorld;
let chat: FakeHost;
let host: FakeHost;
const deployer = new RecordingDeployer();
const releases = new FakeReleases();

test.before(async () => {
  chat = await fakeChatApp({ tokens: new Set(['xoxb-configured']), channels: new Set(['C0DEPLOYS']) });
  host = await fakeCodeHost({ tokens: new Set(['ghp-configured']), repos: new Map([['acme/app', new Set(['main', 'feature'])]]) });
  w = await workerWorld('envact', {
    overrides: {
      adapters: {
        chatapp: { use: 'chat', options: { api_url: `${chat.url}/api`, bot_token: 'xoxb-configured' } },
        vcshost: { use: 'hub', options: { api_url: `${host.url}/api/v3`, token: 'ghp-configured' } },
      },
    },
    configure: (c) => {
      c.registerInstance(DeployerToken, deployer);
      c.registerInstance(ReleasesToken, releases);
    },
  });
  await syncManifest(w, `${example('staging.yaml')}${PIPELINES}`);
});
test.after.always(async () => {
  await w?.stop();
  await chat?.close();
  await host?.close();
});

const ended = (runId: string) =>
  until(async () => {
    const r = (await w.api.get(`/projects/${w.projectId}/runs/${runId}`)).body;
    return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : null;
  }, 'the run to end');
const resultOf = async (run: any, step: string) => (await attemptsOf(w, run.steps.find((s: any) => s.name === step).job_id))[0];

test.serial(
  'env-ensure, deploy, run and notify actions: a preview environment per pull request, outputs readable by later steps; env-delete removes it',
  async (t) => {
    releases.add(w.projectId, { id: 'rel_pr12', tag: 'pr-12-1', git_sha: sha('1'), manifest_hash: null, image_digests: { web: 'sha256:' + '1'.repeat(64) } });
    const started = await w.api.post(`/projects/${w.projectId}/pipelines/preview/run`, { inputs: { number: 12, release_tag: 'pr-12-1' } });
    t.is(started.statusCode, 201, JSON.stringify(started.body));
    const run = await ended(started.body.id);
    t.is(run.status, 'succeeded', JSON.stringify(await Promise.all(run.steps.map((s: any) => resultOf(run, s.name)))));
    t.like((await resultOf(run, 'env')).result_json, { env_name: 'pr-12', created: true, type: 'temporary', kind: 'preview' });
    const deployed = (await resultOf(run, 'deploy')).result_json;
    t.like(deployed, { env_name: 'pr-12', status: 'succeeded', release_id: 'rel_pr12', release_tag: 'pr-12-1', git_sha: sha('1') });
    t.like((await resultOf(run, 'tell')).result_json, { channel: 'C0DEPLOYS' });
    t.is(chat.requests.at(-1)!.body.text, 'pr-12 is up');
    const env = (await w.api.get(`/projects/${w.projectId}/environments/pr-12`)).body;
    t.like(env, { type: 'temporary', kind: 'preview', health: 'healthy', current_release: { tag: 'pr-12-1' } });
    t.is((await w.api.get(`/projects/${w.projectId}/environments/pr-12/deploys`)).body.data[0].id, deployed.deploy_id);

    const cleanup = await ended((await w.api.post(`/projects/${w.projectId}/pipelines/cleanup/run`, { inputs: { number: 12 } })).body.id);
    t.is(cleanup.status, 'succeeded');
    t.like((await resultOf(cleanup, 'remove')).result_json, { env_name: 'pr-12', removed: true });
    t.is((await w.api.get(`/projects/${w.projectId}/environments/pr-12`)).statusCode, 404);
    t.is(deployer.calls.at(-1), 'remove pr-12');
    const again = await ended((await w.api.post(`/projects/${w.projectId}/pipelines/cleanup/run`, { inputs: { number: 12 } })).body.id);
    t.like((await resultOf(again, 'remove')).result_json, { removed: false }, 'deleting what is gone is no failure');
  },
);

test.serial('a deploy action to a suspended environment fails the step with the reason', async (t) => {
  await w.api.post(`/projects/${w.projectId}/environments`, { name: 'pr-13', kind: 'preview' });
  await w.api.post(`/projects/${w.projectId}/environments/pr-13/suspend`, { reason: 'paused' });
  releases.add(w.projectId, { id: 'rel_pr13', tag: 'pr-13-1', git_sha: sha('2'), manifest_hash: null, image_digests: { web: 'sha256:' + '2'.repeat(64) } });
  const run = await ended((await w.api.post(`/projects/${w.projectId}/pipelines/preview/run`, { inputs: { number: 13, release_tag: 'pr-13-1' } })).body.id);
  t.is(run.status, 'failed');
  t.like(await resultOf(run, 'deploy'), { status: 'failed', error: 'action deploy: environment pr-13 is suspended: paused' });
});

test.serial('the job action runs the service once through the deployer: the current release, else the one the run names; the exit code decides', async (t) => {
  await w.api.post(`/projects/${w.projectId}/environments`, { name: 'pr-14', kind: 'preview' });
  const migrate = async (inputs: Record<string, unknown> = {}) => {
    const run = await ended((await w.api.post(`/projects/${w.projectId}/pipelines/migrate/run`, { inputs: { number: 14, ...inputs } })).body.id);
    return { run, attempt: await resultOf(run, 'migrate') };
  };
  const none = await migrate();
  t.is(none.run.status, 'failed');
  t.is(none.attempt.error, 'action job: environment pr-14 has no current release: deploy one first, or run the job after a release step');

  releases.add(w.projectId, { id: 'rel_pr14', tag: 'pr-14-1', git_sha: sha('4'), manifest_hash: null, image_digests: { web: 'sha256:' + '4'.repeat(64) } });
  releases.add(w.projectId, { id: 'rel_pr14b', tag: 'pr-14-2', git_sha: sha('5'), manifest_hash: null, image_digests: { web: 'sha256:' + '5'.repeat(64) } });
  const deploy = await w.api.post(`/projects/${w.projectId}/environments/pr-14/deploy`, { release_tag: 'pr-14-1' });
  t.is(deploy.statusCode, 202);
  await until(async () => (await w.api.get(`/projects/${w.projectId}/environments/pr-14`)).body.current_release, 'the deploy');

  const ok = await migrate();
  t.is(ok.run.status, 'succeeded', String(ok.attempt.error));
  t.like(ok.attempt.result_json, { env_name: 'pr-14', service: 'web', release_tag: 'pr-14-1', exit_code: 0, svc: { status: 'success' } });
  t.deepEqual(deployer.oneOffs.at(-1), {
    env: 'pr-14',
    service: 'web',
    digest: 'sha256:' + '4'.repeat(64),
    command: ['/bin/sh', '-c', 'migrate --up'],
    environment: { GREETING: 'hello' },
  });

  deployer.exitNext = 2;
  const failed = await migrate({ release_tag: 'pr-14-2' });
  t.is(failed.run.status, 'failed');
  t.is(failed.attempt.error, 'job web in pr-14 exited with code 2');
  t.like(failed.attempt.result_json, { release_tag: 'pr-14-2', exit_code: 2, svc: { status: 'failed' } });
  t.is(deployer.oneOffs.at(-1)!.digest, 'sha256:' + '5'.repeat(64), 'the release the run names');
});

test.serial('create-pr opens a pull request through the code host adapter', async (t) => {
  await w.api.patch(`/projects/${w.projectId}`, { repo_url: 'https://code.example/acme/app.git' });
  const run = await ended((await w.api.post(`/projects/${w.projectId}/pipelines/pr/run`, {})).body.id);
  const open = await resultOf(run, 'open');
  t.is(run.status, 'succeeded', String(open.error));
  t.like(open.result_json, { number: 1, head: 'feature', base: 'main' });
  t.like(host.requests.at(-1)!.body, { title: 'Bump', body: 'from svc', head: 'feature', base: 'main' });
});

test.serial("git.ref_policy auto and env check out the environment's current release SHA; without a release auto takes the branch", async (t) => {
  const released = git(w.bare, 'rev-parse', 'main');
  const clone = mkdtempSync(path.join(tmpdir(), 'svc-envs-clone-'));
  git(clone, 'clone', '--quiet', w.bare, '.');
  git(clone, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '--allow-empty', '-m', 'after the release');
  git(clone, 'push', '--quiet', 'origin', 'HEAD:main');
  rmSync(clone, { recursive: true, force: true });
  await w.api.patch(`/projects/${w.projectId}`, { repo_url: `file://${w.bare}` });
  const manifest = (await w.api.get(`/projects/${w.projectId}/manifest`)).body;
  await w.api.post(`/projects/${w.projectId}/environments`, { name: 'qa' });
  const job = async (env: string, policy: string) => {
    const res = await w.api.post(`/projects/${w.projectId}/jobs`, {
      description: 'look',
      env_name: env,
      git: { ref_policy: policy },
      hints: { step: { kind: 'script', script: { run: 'git rev-parse HEAD' } } },
    });
    t.is(res.statusCode, 201, JSON.stringify(res.body));
    return (await attemptsOf(w, (await finished(w, res.body.id)).id))[0];
  };
  t.like((await job('qa', 'auto')).git, { resolved_sha: git(w.bare, 'rev-parse', 'main'), ref_source: 'project_default' });

  const deploy = await w.api.post(`/projects/${w.projectId}/environments/qa/deploy`, {
    git_sha: released,
    manifest_hash: manifest.manifest_hash,
    image_digests: { web: 'sha256:' + '3'.repeat(64) },
  });
  t.is(deploy.statusCode, 202, JSON.stringify(deploy.body));
  await until(async () => (await w.api.get(`/projects/${w.projectId}/environments/qa`)).body.current_release, 'the deploy');
  t.like((await job('qa', 'auto')).git, { resolved_ref: released, resolved_sha: released, ref_source: 'env' });
  t.like((await job('qa', 'env')).git, { resolved_sha: released, ref_source: 'env' });
});
