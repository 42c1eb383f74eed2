/**
 * A build through the builds plugin with `builds.backend: buildkit` against the fake Kubernetes API
 * server (test/fixtures/fake-kube; the build image is played by test/fixtures/kube-builders):
 * POST /projects/{id}/builds → the worker's runner → a pod per service → run completed, artifacts
 * recorded with the digests the pods reported.
 */
import test from 'ava';
import { chmodSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FakeKube } from '../fixtures/fake-kube/server.ts';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { settled, twoServiceRepo } from './helpers.ts';

const SHIMS = fileURLToPath(new URL('../fixtures/kube-builders/', import.meta.url));
let fake: FakeKube;
let s: TestServer;
let admin: ReturnType<typeof as>;
let create: () => Promise<{ statusCode: number; body: any }>;

test.before(async () => {
  fake = await new FakeKube({ imageEnv: { PATH: `${SHIMS}:${process.env.PATH}`, HOME: '/tmp' } }).start();
  s = await startTestServer({
    overrides: {
      roles: ['api', 'worker'],
      builds: {
        poll_ms: 50,
        log_flush_ms: 0,
        backend: 'buildkit',
        builders: { buildkit: { server: fake.url, token: fake.token, insecure_skip_tls_verify: true, namespace: 'builds' } },
      },
    },
  });
});
test.after.always(async () => {
  await s?.stop();
  await fake?.stop();
});

test.serial('a build with backend buildkit runs in pods of the cluster and completes with the artifacts they reported', async (t) => {
  admin = as(s.server, (await bootstrapAdmin(s.server)).token);
  const orgId = (await admin.post('/orgs', { name: 'Kube Build Org' })).body.id;
  const repo = twoServiceRepo();
  chmodSync(repo.dir, 0o755); // the buildkit pod runs as uid 1000
  const project = await admin.post('/projects', { org_id: orgId, name: 'Kube', slug: `kube${process.pid % 1000}`, repo_url: repo.url });
  t.is(project.statusCode, 201, JSON.stringify(project.body));
  const hash = (await admin.post(`/projects/${project.body.id}/manifest`, { ref: repo.sha })).body.manifest_hash;
  create = () => admin.post(`/projects/${project.body.id}/builds`, { git_sha: repo.sha, manifest_hash: hash, force_rebuild: true });
  const created = await create();
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const done = await settled(admin, created.body.id, 120_000);
  t.like(done, { status: 'completed', latest_run: { status: 'completed', backend: 'buildkit', error_class: null } }, JSON.stringify(done));

  const artifacts = (await admin.get(`/builds/${created.body.id}/artifacts`)).body.data;
  t.deepEqual(
    artifacts.map((a: any) => a.service_name),
    ['api', 'web'],
  );
  for (const a of artifacts) t.regex(a.digest, /^sha256:[0-9a-f]{64}$/);
  const pods = fake.createdPods();
  t.is(pods.length, 2);
  t.is(pods[0].spec.activeDeadlineSeconds, 1800, 'builds.timeout_seconds: the cluster ends a build whose worker is gone');
  t.true(pods[0].spec.containers[0].args.includes(`context=${repo.url}#${repo.sha}:api`));
  t.true(
    pods[0].spec.containers[0].args.some((a: string) => a.endsWith(',push=false')),
    'registry none: nothing pushed',
  );
  const logs = (await admin.get(`/builds/${created.body.id}/logs`)).body.data.map((l: any) => l.line);
  t.true(logs.some((l: string) => /^buildkit: pod svc-buildkit-.* in namespace builds builds api$/.test(l)));
  t.true(logs.some((l: string) => l.includes(`exporting manifest ${artifacts[0].digest}`)));
  t.is(fake.pods.size, 0, 'no pod left');
  t.is(fake.secrets.size, 0, 'no secret left');
});

test.serial('with the cluster gone, the run fails with resource_error naming the backend and why, never a success', async (t) => {
  await fake.stop();
  const created = await create();
  const done = await settled(admin, created.body.id, 60_000);
  t.like(done, { status: 'failed', latest_run: { status: 'failed', backend: 'buildkit', error_class: 'resource_error' } });
  t.regex(
    done.latest_run.error_message,
    /^builder 'buildkit' is not available here: buildkit: the cluster does not answer in namespace builds: .*ECONNREFUSED/,
  );
});
