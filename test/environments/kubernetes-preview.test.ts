/**
 * Flow 2 of docs/environments.md on the Kubernetes deployer (fake API server): a pull request's
 * pipeline ensures a temporary preview environment, deploys its release there as a Deployment that
 * becomes ready, and the cleanup pipeline's env-delete removes the environment's namespace; a
 * `job` step runs the service once as a pod of its image, its output in the step's log.
 */
import test from 'ava';
import { ReleasesToken } from '../../core/ports/releases.ts';
import { FakeReleases } from '../fixtures/deployer.ts';
import { FakeKube } from '../fixtures/fake-kube/server.ts';
import { attemptsOf, logLines, syncManifest, until, workerWorld, type WorkerWorld } from '../worker/helpers.ts';
import { sha } from './helpers.ts';

const MANIFEST = `
services:
  web:
    image: example/web
    command: [/bin/sh, -c, 'printf %s "$GREETING" > page; exec sleep 600']
    ports: [8080]
    environment:
      GREETING: preview
    healthcheck:
      command: test -s page
      interval_seconds: 1
      timeout_seconds: 2
      retries: 2
pipelines:
  preview:
    steps:
      - { name: env, action: { type: env-ensure, with: { env_name: 'pr-\${inputs.number}', kind: preview } } }
      - { name: deploy, action: { type: deploy, with: { env_name: 'pr-\${inputs.number}' } }, depends_on: [env] }
  migrate:
    steps:
      - { name: migrate, action: { type: job, with: { service: web, env_name: 'pr-\${inputs.number}', command: 'echo "migrating with $GREETING"; exit \${inputs.code}' } } }
  cleanup:
    steps:
      - { name: remove, action: { type: env-delete, with: { env_name: 'pr-\${inputs.number}' } } }
`;

const kube = new FakeKube({ stepMs: 20 });
const releases = new FakeReleases();
let w: WorkerWorld;

test.before(async () => {
  await kube.start();
  w = await workerWorld('envkpr', {
    overrides: {
      adapters: {
        deployer: {
          use: 'kubernetes',
          options: { server: kube.url, token: kube.token, insecure_skip_tls_verify: true, progress_deadline_seconds: 5, rollout_timeout_ms: 60_000 },
        },
      },
    },
    configure: (c) => c.registerInstance(ReleasesToken, releases),
  });
  await syncManifest(w, MANIFEST);
});
test.after.always(async () => {
  await w?.stop();
  await kube.stop();
});

const ended = (runId: string) =>
  until(async () => {
    const r = (await w.api.get(`/projects/${w.projectId}/runs/${runId}`)).body;
    return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : null;
  }, 'the run to end');
const resultOf = async (run: any, step: string) => (await attemptsOf(w, run.steps.find((s: any) => s.name === step).job_id))[0];

test.serial('flow 2 on the cluster: PR opened → env-ensure pr-12 and deploy run it in its own namespace; PR closed → env-delete removes it', async (t) => {
  const digest = 'sha256:' + '1'.repeat(64);
  releases.add(w.projectId, { id: 'rel_pr12', tag: 'pr-12-1', git_sha: sha('1'), manifest_hash: null, image_digests: { web: digest } });
  const run = await ended((await w.api.post(`/projects/${w.projectId}/pipelines/preview/run`, { inputs: { number: 12, release_tag: 'pr-12-1' } })).body.id);
  t.is(run.status, 'succeeded', JSON.stringify(await Promise.all(run.steps.map((s: any) => resultOf(run, s.name)))));
  t.like((await resultOf(run, 'deploy')).result_json, { env_name: 'pr-12', status: 'succeeded', release_tag: 'pr-12-1' });
  const env = (await w.api.get(`/projects/${w.projectId}/environments/pr-12`)).body;
  t.like(env, { type: 'temporary', kind: 'preview', health: 'healthy', current_release: { tag: 'pr-12-1' } });

  const ns = `svc-envkpr-pr-12`;
  t.like(kube.apps.namespaces.get(ns)?.metadata.labels, { 'svc/environment-id': env.id });
  const d = kube.apps.deployments.get(`${ns}/web`)!.obj;
  t.is(d.spec.template.spec.containers[0].image, `example/web@${digest}`);
  t.like(d.status, { availableReplicas: 1, updatedReplicas: 1 });
  t.truthy(kube.apps.services.get(`${ns}/web`));

  const cleanup = await ended((await w.api.post(`/projects/${w.projectId}/pipelines/cleanup/run`, { inputs: { number: 12 } })).body.id);
  t.is(cleanup.status, 'succeeded');
  t.like((await resultOf(cleanup, 'remove')).result_json, { env_name: 'pr-12', removed: true });
  t.is((await w.api.get(`/projects/${w.projectId}/environments/pr-12`)).statusCode, 404);
  await until(async () => !kube.apps.namespaces.has(ns), 'the namespace to go');
  t.is(kube.apps.deployments.get(`${ns}/web`), undefined);
  await until(async () => ![...kube.pods.values()].some((p) => p.obj.metadata.namespace === ns), 'its pods to go');
});

test.serial(
  'a job step on the cluster: the service image runs once as a pod with its Secret, its output in the step log, its exit code the result',
  async (t) => {
    const digest = 'sha256:' + '2'.repeat(64);
    releases.add(w.projectId, { id: 'rel_pr21', tag: 'pr-21-1', git_sha: sha('2'), manifest_hash: null, image_digests: { web: digest } });
    const preview = await ended(
      (await w.api.post(`/projects/${w.projectId}/pipelines/preview/run`, { inputs: { number: 21, release_tag: 'pr-21-1' } })).body.id,
    );
    t.is(preview.status, 'succeeded');
    const ns = 'svc-envkpr-pr-21';
    const jobPods = () => [...kube.pods.values()].filter((p) => p.obj.metadata.namespace === ns && p.obj.metadata.labels?.['svc/one-off']);

    const ok = await ended((await w.api.post(`/projects/${w.projectId}/pipelines/migrate/run`, { inputs: { number: 21, code: 0 } })).body.id);
    const attempt = await resultOf(ok, 'migrate');
    t.is(ok.status, 'succeeded', String(attempt.error));
    t.like(attempt.result_json, { env_name: 'pr-21', service: 'web', release_tag: 'pr-21-1', image_digest: digest, exit_code: 0, timed_out: false });
    const lines = (await logLines(w, attempt.job_id, attempt.id)).map((l) => l.line);
    t.true(lines.includes('migrating with preview'), lines.join('\n'));
    const [pod] = kube.createdPods().filter((b) => b.metadata.labels?.['svc/one-off'] === 'web');
    t.is(pod.spec.containers[0].image, `example/web@${digest}`);
    // `${inputs.code}` reaches the pod's shell as a variable set at the start of the line, never spliced into it (test/security/pipeline-inputs.test.ts).
    t.deepEqual(pod.spec.containers[0].args, [
      '/bin/sh',
      '-c',
      `SVC_INPUT_CODE='0'; export SVC_INPUT_CODE\necho "migrating with $GREETING"; exit "$SVC_INPUT_CODE"`,
    ]);
    await until(async () => jobPods().length === 0, 'the job pod to go');

    const failed = await ended((await w.api.post(`/projects/${w.projectId}/pipelines/migrate/run`, { inputs: { number: 21, code: 3 } })).body.id);
    t.is(failed.status, 'failed');
    t.like(await resultOf(failed, 'migrate'), { error: 'job web in pr-21 exited with code 3', result_json: { exit_code: 3 } });
    await until(async () => jobPods().length === 0, 'the failed job pod to go');
    t.like((await w.api.get(`/projects/${w.projectId}/environments/pr-21/health`)).body, { health: 'healthy', health_detail: [{ service: 'web' }] });
  },
);
