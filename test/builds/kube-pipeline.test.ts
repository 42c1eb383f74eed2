/**
 * A build through the builds plugin with `builds.backend: buildkit` against the fake Kubernetes API
 * server (test/fixtures/fake-kube; the build image is played by test/fixtures/kube-builders):
 * POST /projects/{id}/builds → the worker's runner → a pod per service → run completed, artifacts
 * recorded with the digests the pods reported.
 */
import test from 'ava';
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FakeKube } from '../fixtures/fake-kube/server.ts';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { privateGitServer } from './git-http.ts';
import { settled, twoServiceRepo } from './helpers.ts';

const SHIMS = fileURLToPath(new URL('../fixtures/kube-builders/', import.meta.url));
let fake: FakeKube;
let s: TestServer;
let admin: ReturnType<typeof as>;
let create: () => Promise<{ statusCode: number; body: any }>;
const TOKEN = 'ghp_kube-pipeline-private-token';
let privateRepo: ReturnType<typeof twoServiceRepo>;
let git: Awaited<ReturnType<typeof privateGitServer>>;
let caDir: string;

test.before(async () => {
  privateRepo = twoServiceRepo();
  git = await privateGitServer(privateRepo.dir, TOKEN);
  // The "image's" CA bundle: the private server's certificate, readable by the buildkit pod's uid 1000.
  caDir = mkdtempSync(path.join(tmpdir(), 'svc-kube-pipeline-ca-'));
  chmodSync(caDir, 0o755);
  copyFileSync(process.env.GIT_SSL_CAINFO!, path.join(caDir, 'ca.pem'));
  chmodSync(path.join(caDir, 'ca.pem'), 0o644);
  fake = await new FakeKube({ imageEnv: { PATH: `${SHIMS}:${process.env.PATH}`, HOME: '/tmp', GIT_SSL_CAINFO: path.join(caDir, 'ca.pem') } }).start();
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
  await git?.stop();
  if (caDir) rmSync(caDir, { recursive: true, force: true });
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

test.serial(
  'a private https repository builds in the pods with the project token, which reaches them only through a secretKeyRef and shows nowhere',
  async (t) => {
    const orgId = (await admin.post('/orgs', { name: 'Kube Private Org' })).body.id;
    const project = await admin.post('/projects', { org_id: orgId, name: 'Kube private', slug: `kprv${process.pid % 1000}`, repo_url: git.url });
    t.is(project.statusCode, 201, JSON.stringify(project.body));
    t.is((await admin.post(`/projects/${project.body.id}/secrets`, { name: 'GIT_TOKEN', value: TOKEN })).statusCode, 201);
    const hash = (await admin.post(`/projects/${project.body.id}/manifest`, { ref: privateRepo.sha })).body.manifest_hash;
    const before = fake.createdPods().length;
    const created = await admin.post(`/projects/${project.body.id}/builds`, { git_sha: privateRepo.sha, manifest_hash: hash });
    t.is(created.statusCode, 201, JSON.stringify(created.body));
    const done = await settled(admin, created.body.id, 120_000);
    t.like(done, { status: 'completed', latest_run: { status: 'completed', backend: 'buildkit', error_class: null } }, JSON.stringify(done));
    const pods = fake.createdPods().slice(before);
    t.is(pods.length, 2);
    const gitSecret = fake.createdSecrets().at(-1);
    t.is(gitSecret.type, 'Opaque');
    t.deepEqual(
      pods[0].spec.containers[0].env.find((e: any) => e.name === 'GIT_AUTH_TOKEN'),
      { name: 'GIT_AUTH_TOKEN', valueFrom: { secretKeyRef: { name: gitSecret.metadata.name, key: 'token' } } },
    );
    const logs = (await admin.get(`/builds/${created.body.id}/logs?limit=1000`)).body.data.map((l: any) => l.line);
    for (const text of [JSON.stringify(fake.createdPods()), JSON.stringify(logs), JSON.stringify(done)]) t.false(text.includes(TOKEN));
    t.true(git.seen.authorized > 0);
    t.is(fake.pods.size, 0, 'no pod left');
    t.is(fake.secrets.size, 0, 'no secret left');
  },
);

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
