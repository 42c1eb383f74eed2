/**
 * The in-cluster builders (buildkit, kaniko) against the LOCAL FAKE API server
 * (test/fixtures/fake-kube), not a cluster: the fake runs each build pod's container as a local
 * process, and test/fixtures/kube-builders plays the images (buildctl-daemonless.sh, the kaniko
 * executor): they really clone the repository at the commit and read the Dockerfile, but build
 * no layers and push nowhere. What only a cluster shows (the real images, RBAC, a registry) is
 * for docs/builds.md's "Running against a real cluster".
 */
import test from 'ava';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import buildkitAdapter from '../../adapters/builder/buildkit/index.ts';
import kanikoAdapter from '../../adapters/builder/kaniko/index.ts';
import type { AdapterDeps } from '../../core/adapters.ts';
import { repoAccess } from '../../core/git-access.ts';
import { BuildFailure, type Builder, type BuildRequest, type PushTarget } from '../../core/ports/builder.ts';
import { FakeKube } from '../fixtures/fake-kube/server.ts';
import { tempRepo } from '../manifest/helpers.ts';
import { privateGitServer } from './git-http.ts';

const SHIMS = fileURLToPath(new URL('../fixtures/kube-builders/', import.meta.url));
const PUSH: PushTarget = { host: 'registry.example:5000', username: 'builder', password: 'pa55-w0rd-never-logged' };
const GOOD_AUTH = Buffer.from(`${PUSH.username}:${PUSH.password}`).toString('base64');
const deps = (config?: unknown) => ({ logger: pino({ level: 'silent' }), config, db: {}, databaseUrl: '' }) as unknown as AdapterDeps;
const adapters = { buildkit: buildkitAdapter, kaniko: kanikoAdapter };
type Backend = keyof typeof adapters;

const fakes: FakeKube[] = [];
test.after.always(() => Promise.all(fakes.map((f) => f.stop())));

async function fakeKube(imageEnv: Record<string, string> = {}): Promise<FakeKube> {
  const fake = await new FakeKube({
    imageEnv: { PATH: `${SHIMS}:${process.env.PATH}`, HOME: '/tmp', FAKE_REGISTRY_AUTH: GOOD_AUTH, ...imageEnv },
    imageFiles: { '/kaniko/executor': path.join(SHIMS, 'executor') },
  }).start();
  fakes.push(fake);
  return fake;
}

function builderFor(backend: Backend, fake: FakeKube | { url: string; token: string }, extra: Record<string, unknown> = {}): Builder {
  const adapter = adapters[backend];
  const { value, error } = adapter.options.validate({
    server: fake.url,
    token: fake.token,
    insecure_skip_tls_verify: true,
    namespace: 'builds',
    kill_grace_seconds: 1,
    ...extra,
  });
  if (error) throw error;
  return adapter.create(value, deps()) as Builder;
}

/** A repository with two services (api at the default Dockerfile, web at a named one), readable by the pod's user. */
function repo(files: Record<string, string> = {}) {
  const r = tempRepo();
  const all = {
    'api/Dockerfile': 'FROM svc-test-base:1\nCOPY . /srv/api\n',
    'web/build/web.Dockerfile': 'FROM svc-test-base:1\nRUN echo building web\n',
    ...files,
  };
  for (const [file, text] of Object.entries(all)) {
    mkdirSync(path.dirname(path.join(r.dir, file)), { recursive: true });
    writeFileSync(path.join(r.dir, file), text);
  }
  const sha = r.commit(null, 'services');
  chmodSync(r.dir, 0o755); // the buildkit pod runs as uid 1000
  return { ...r, sha };
}

function request(r: { url: string; sha: string }, extra: Partial<BuildRequest> = {}): BuildRequest & { lines: { line: string; stream?: string }[] } {
  const lines: { line: string; stream?: string }[] = [];
  return {
    runId: 'brun_TEST1',
    repoUrl: r.url,
    access: { env: {}, secrets: [] },
    gitSha: r.sha,
    services: [
      { service: 'api', context: 'api', dockerfile: 'Dockerfile', image_ref: `${PUSH.host}/acme/api:sha-${r.sha}` },
      { service: 'web', context: 'web', dockerfile: 'build/web.Dockerfile', image_ref: `${PUSH.host}/acme/web:sha-${r.sha}` },
    ],
    platforms: [],
    push: PUSH,
    signal: new AbortController().signal,
    log: (line, stream) => lines.push({ line, stream }),
    lines,
    ...extra,
  };
}

function cleanedUp(t: { true(v: boolean, m?: string): void; is(a: unknown, b: unknown, m?: string): void }, fake: FakeKube): void {
  for (const pod of fake.createdPods()) t.true(fake.deleted('pods', pod.metadata.name), `pod ${pod.metadata.name} deleted`);
  for (const secret of fake.createdSecrets()) t.true(fake.deleted('secrets', secret.metadata.name), `secret ${secret.metadata.name} deleted`);
  t.is(fake.pods.size, 0, 'no pod left');
  t.is(fake.secrets.size, 0, 'no secret left');
}

/** The credentials appear nowhere but base64 inside the Secret: not in the pods, not in the log. */
function noCredentialsInClear(t: { false(v: boolean, m?: string): void }, fake: FakeKube, lines: { line: string }[]): void {
  const pods = JSON.stringify(fake.createdPods());
  t.false(pods.includes(PUSH.password) || pods.includes(GOOD_AUTH), 'pod specs hold no credentials');
  t.false(
    lines.some((l) => l.line.includes(PUSH.password) || l.line.includes(GOOD_AUTH)),
    'the log holds no credentials',
  );
}

async function failure(p: Promise<unknown>): Promise<BuildFailure> {
  try {
    await p;
  } catch (e) {
    if (e instanceof BuildFailure) return e;
    throw e;
  }
  throw new Error('the build succeeded');
}

test('buildkit: two services build in pods on the git context at the commit, digests from the metadata file, pods and secret deleted', async (t) => {
  const fake = await fakeKube();
  const r = repo();
  const req = request(r);
  const images = await builderFor('buildkit', fake).build(req);
  t.deepEqual(
    images.map((i) => [i.service_name, i.image_ref]),
    [
      ['api', `${PUSH.host}/acme/api:sha-${r.sha}`],
      ['web', `${PUSH.host}/acme/web:sha-${r.sha}`],
    ],
  );
  for (const i of images) t.regex(i.digest, /^sha256:[0-9a-f]{64}$/);
  t.not(images[0].digest, images[1].digest);

  const [api, web] = fake.createdPods();
  const c = api.spec.containers[0];
  t.deepEqual(c.command, ['buildctl-daemonless.sh']);
  t.deepEqual(c.args, [
    'build',
    '--frontend',
    'dockerfile.v0',
    '--opt',
    `context=${r.url}#${r.sha}:api`,
    '--opt',
    'filename=Dockerfile',
    '--output',
    `type=image,name=${PUSH.host}/acme/api:sha-${r.sha},push=true`,
    '--metadata-file',
    '/dev/termination-log',
    '--progress',
    'plain',
  ]);
  t.true(web.spec.containers[0].args.includes(`context=${r.url}#${r.sha}:web`));
  t.true(web.spec.containers[0].args.includes('filename=build/web.Dockerfile'));
  t.is(c.image, 'moby/buildkit:rootless');
  t.like(c.securityContext, { runAsUser: 1000, seccompProfile: { type: 'Unconfined' } });
  t.deepEqual(c.env, [
    { name: 'BUILDKITD_FLAGS', value: '--oci-worker-no-process-sandbox' },
    { name: 'DOCKER_CONFIG', value: '/home/user/.docker' },
  ]);
  t.is(api.metadata.namespace ?? 'builds', 'builds');
  t.is(api.spec.restartPolicy, 'Never');
  t.like(api.metadata.labels, { 'svc/builder': 'buildkit', 'svc/build-run': 'brun_TEST1', 'svc/service': 'api' });
  const [secret] = fake.createdSecrets();
  t.is(secret.type, 'kubernetes.io/dockerconfigjson');
  t.deepEqual(JSON.parse(Buffer.from(secret.data['.dockerconfigjson'], 'base64').toString()), { auths: { [PUSH.host]: { auth: GOOD_AUTH } } });
  t.deepEqual(api.spec.volumes[0], {
    name: 'docker-config',
    secret: { secretName: secret.metadata.name, items: [{ key: '.dockerconfigjson', path: 'config.json' }] },
  });
  t.true(fake.requests.some((q) => q.path === `/api/v1/namespaces/builds/pods/${api.metadata.name}/log` && q.query.follow === 'true'));

  t.true(
    req.lines.some((l) => l.line === `#5 pushing manifest for ${PUSH.host}/acme/api:sha-${r.sha}@${images[0].digest} done`),
    'the log streamed',
  );
  t.true(
    req.lines.some((l) => l.line.includes('0.1 building web')),
    "web's RUN ran",
  );
  noCredentialsInClear(t, fake, req.lines);
  cleanedUp(t, fake);
});

test('kaniko: two services build with --context/--dockerfile/--destination/--digest-file, the digest read back, everything deleted', async (t) => {
  const fake = await fakeKube();
  const r = repo();
  const req = request(r, { platforms: ['linux/arm64'] });
  const images = await builderFor('kaniko', fake).build(req);
  t.is(images.length, 2);
  for (const i of images) t.regex(i.digest, /^sha256:[0-9a-f]{64}$/);
  t.deepEqual(images[0].platforms, ['linux/arm64']);
  const [api, web] = fake.createdPods();
  const c = api.spec.containers[0];
  t.deepEqual(c.command, ['/kaniko/executor']);
  const repoPath = r.url.replace(/^file:\/\//, '');
  t.deepEqual(c.args, [
    `--context=git://${repoPath}#${r.sha}`,
    '--context-sub-path=api',
    '--dockerfile=Dockerfile',
    `--destination=${PUSH.host}/acme/api:sha-${r.sha}`,
    '--digest-file=/dev/termination-log',
    '--custom-platform=linux/arm64',
  ]);
  t.true(web.spec.containers[0].args.includes('--dockerfile=build/web.Dockerfile'));
  t.is(c.image, 'gcr.io/kaniko-project/executor:latest');
  t.deepEqual(c.volumeMounts[0], { name: 'docker-config', mountPath: '/kaniko/.docker', readOnly: true });
  t.true(req.lines.some((l) => l.line === `INFO[0000] Pushed ${PUSH.host}/acme/api@${images[0].digest}`));
  noCredentialsInClear(t, fake, req.lines);
  cleanedUp(t, fake);
});

for (const backend of ['buildkit', 'kaniko'] as const) {
  test(`${backend}: a broken Dockerfile is a build_error with the tool's words; a failing RUN names its stage`, async (t) => {
    const fake = await fakeKube();
    const r = repo({ 'api/Dockerfile': 'FROM svc-test-base:1\nFOOBAR nope\n' });
    const parse = await failure(builderFor(backend, fake).build(request(r)));
    t.is(parse.errorClass, 'build_error');
    t.regex(parse.message, /^api: .*parse error.*line 2: unknown instruction: FOOBAR/);
    cleanedUp(t, fake);

    const r2 = repo({ 'web/build/web.Dockerfile': 'FROM svc-test-base:1\nRUN echo about to fail && exit 3\n' });
    const req = request(r2);
    const run = await failure(builderFor(backend, fake).build(req));
    t.is(run.errorClass, 'build_error');
    t.regex(run.message, /^web: /);
    t.is(run.stage, backend === 'buildkit' ? '[2/2] RUN echo about to fail && exit 3' : '[svc-test-base:1] RUN echo about to fail && exit 3');
    t.true(
      req.lines.some((l) => l.line.includes('about to fail')),
      'the output before the failure was streamed',
    );
    cleanedUp(t, fake);
  });

  test(`${backend}: a commit the repository lacks is a clone_error; wrong registry credentials an auth_error`, async (t) => {
    const fake = await fakeKube();
    const r = repo();
    const clone = await failure(builderFor(backend, fake).build(request({ url: r.url, sha: 'f'.repeat(40) })));
    t.is(clone.errorClass, 'clone_error');
    const auth = await failure(builderFor(backend, fake).build(request(r, { push: { ...PUSH, password: 'wrong' } })));
    t.is(auth.errorClass, 'auth_error', auth.message);
    cleanedUp(t, fake);
  });

  test(`${backend}: cancelling deletes the pod and the secret`, async (t) => {
    const fake = await fakeKube();
    const r = repo({ 'api/Dockerfile': 'FROM svc-test-base:1\nRUN echo started && sleep 60\n' });
    const abort = new AbortController();
    const req = request(r, { signal: abort.signal });
    const building = builderFor(backend, fake).build(req);
    for (let i = 0; i < 400 && !req.lines.some((l) => l.line.includes('started')); i++) await new Promise((res) => setTimeout(res, 50));
    t.true(
      req.lines.some((l) => l.line.includes('started')),
      'the build was running',
    );
    abort.abort(new Error('cancelled'));
    await t.throwsAsync(building, { message: 'cancelled' });
    t.is(fake.createdPods().length, 1, 'web never started');
    cleanedUp(t, fake);
  });

  test(`${backend}: an unreachable cluster is not available, naming the backend; an image that cannot be pulled is a resource_error`, async (t) => {
    const gone = await new FakeKube().start();
    const { url, token } = gone;
    await gone.stop();
    const builder = builderFor(backend, { url, token });
    const availability = await builder.available();
    t.false(availability.ok);
    t.regex((availability as { reason: string }).reason, new RegExp(`^${backend}: the cluster does not answer in namespace builds: .*ECONNREFUSED`));
    const refused = await failure(builder.build(request(repo())));
    t.is(refused.errorClass, 'resource_error');
    t.regex(refused.message, new RegExp(`^builder ${backend}: `));

    const fake = await fakeKube();
    t.deepEqual(await builderFor(backend, fake).available(), { ok: true });
    const pull = await failure(builderFor(backend, fake, { image: 'missing/builder:1' }).build(request(repo())));
    t.is(pull.errorClass, 'resource_error');
    t.regex(pull.message, new RegExp(`^builder ${backend}: pod .* cannot start: ImagePullBackOff`));
    const unschedulable = await failure(builderFor(backend, fake, { resources: { requests: { cpu: '64' } } }).build(request(repo())));
    t.is(unschedulable.errorClass, 'resource_error');
    t.regex(unschedulable.message, /unschedulable: 0\/1 nodes are available: 1 Insufficient cpu/);
    cleanedUp(t, fake);
  });
}

test('what can be refused is refused before anything is created: a context leaving the repository, several platforms for kaniko', async (t) => {
  const fake = await fakeKube();
  const r = repo();
  const escape = request(r);
  escape.services[0].context = '../elsewhere';
  const left = await failure(builderFor('buildkit', fake).build(escape));
  t.is(left.errorClass, 'build_error');
  t.regex(left.message, /services\.api\.build\.context '\.\.\/elsewhere' leaves the repository/);
  const multi = await failure(builderFor('kaniko', fake).build(request(r, { platforms: ['linux/amd64', 'linux/arm64'] })));
  t.regex(multi.message, /kaniko builds one platform per image/);
  t.is(fake.requests.filter((q) => q.method === 'POST').length, 0);
});

test('without its own connection options a builder uses the kubernetes runtime’s; bad options fail naming the option', async (t) => {
  const fake = await fakeKube();
  const { value } = buildkitAdapter.options.validate({ namespace: 'builds' });
  const builder = buildkitAdapter.create(
    value,
    deps({
      adapters: { runtime: { use: 'kubernetes', options: { server: fake.url, token: fake.token, insecure_skip_tls_verify: true, image: 'x', workspace: {} } } },
    }),
  ) as Builder;
  t.deepEqual(await builder.available(), { ok: true });
  t.true(fake.requests.some((q) => q.path === '/api/v1/namespaces/builds/pods/svc-builder-availability-probe'));
  const bad = kanikoAdapter.options.validate({ server: 'http://x', kubeconfig: '/k', unschedulable: 'later' }, { abortEarly: false });
  t.regex(bad.error!.message, /unschedulable/);
  t.regex(bad.error!.message, /kubeconfig|server/);
  t.throws(() => kanikoAdapter.create(kanikoAdapter.options.validate({ server: 'http://127.0.0.1:1' }).value, deps()), {
    message: /builds\.builders\.kaniko\.server: an http:\/\/ server needs insecure_skip_tls_verify/,
  });
});

test('an image that lacks the tool (the container cannot start its command) is a resource_error, not a build_error', async (t) => {
  const fake = await new FakeKube({ imageEnv: { PATH: '/usr/bin:/bin', HOME: '/tmp' } }).start();
  fakes.push(fake);
  for (const backend of ['buildkit', 'kaniko'] as const) {
    const failed = await failure(builderFor(backend, fake).build(request(repo())));
    t.is(failed.errorClass, 'resource_error', failed.message);
    t.regex(failed.message, new RegExp(`^api: the ${backend} image could not run its command: .*(ENOENT|no such file)`));
  }
  cleanedUp(t, fake);
});

test('a private https repository builds with the project token, which reaches the pods only through a secretKeyRef; without it or with a wrong one, a clone_error that shows no token', async (t) => {
  const TOKEN = 'ghp_pr1vate-repo-token-never-shown';
  const r = repo();
  // One server for both backends: it sets GIT_SSL_CAINFO for this process, which the "images" get as their CA bundle.
  const server = await privateGitServer(r.dir, TOKEN);
  t.teardown(() => server.stop());
  const caDir = mkdtempSync(path.join(tmpdir(), 'svc-kube-git-ca-'));
  t.teardown(() => rmSync(caDir, { recursive: true, force: true }));
  chmodSync(caDir, 0o755); // the buildkit pod runs as uid 1000
  const ca = path.join(caDir, 'ca.pem');
  copyFileSync(process.env.GIT_SSL_CAINFO!, ca);
  chmodSync(ca, 0o644);
  const fake = await fakeKube({ GIT_SSL_CAINFO: ca });
  const accessWith = (token: string) =>
    repoAccess(
      server.url,
      { tokenSecret: 'GIT_TOKEN', sshKeySecret: 'GIT_SSH_KEY', lookup: async () => token, credentialsDir: '/nonexistent', scopeHint: '' },
      'cloning',
    );
  const access = await accessWith(TOKEN);
  const forms = [TOKEN, ...access.secrets, Buffer.from(TOKEN).toString('base64')];
  const expectedEnv = {
    buildkit: [{ name: 'GIT_AUTH_TOKEN', key: 'token' }],
    kaniko: [{ name: 'GIT_PASSWORD', key: 'token' }],
  };

  for (const backend of ['buildkit', 'kaniko'] as const) {
    const seen = server.seen.authorized;
    const req = request({ url: server.url, sha: r.sha }, { access });
    const images = await builderFor(backend, fake).build(req);
    t.is(images.length, 2, backend);
    t.true(server.seen.authorized > seen, `${backend} cloned with the token`);

    const [, gitSecret] = fake.createdSecrets().slice(-2);
    t.is(gitSecret.type, 'Opaque');
    t.deepEqual(Object.keys(gitSecret.data), ['token']);
    t.is(Buffer.from(gitSecret.data.token, 'base64').toString(), TOKEN);
    const pods = fake.createdPods().slice(-2);
    for (const pod of pods) {
      const env = pod.spec.containers[0].env as { name: string; value?: string; valueFrom?: unknown }[];
      for (const { name, key } of expectedEnv[backend])
        t.deepEqual(
          env.find((e) => e.name === name),
          { name, valueFrom: { secretKeyRef: { name: gitSecret.metadata.name, key } } },
        );
      if (backend === 'buildkit') t.true(pod.spec.containers[0].args.join(' ').includes('--secret id=GIT_AUTH_TOKEN,env=GIT_AUTH_TOKEN'));
      else
        t.deepEqual(
          env.find((e) => e.name === 'GIT_USERNAME'),
          { name: 'GIT_USERNAME', value: 'x-access-token' },
        );
    }
    const specs = JSON.stringify(fake.createdPods());
    for (const form of forms) {
      t.false(specs.includes(form), `${backend}: no pod spec holds the token`);
      t.false(
        req.lines.some((l) => l.line.includes(form)),
        `${backend}: the log holds no token`,
      );
    }

    const missing = await failure(builderFor(backend, fake).build(request({ url: server.url, sha: r.sha })));
    t.is(missing.errorClass, 'clone_error', missing.message);
    t.regex(missing.message, /^api: .*\(the repository asks for credentials: a private HTTPS repository needs the project's token secret/);
    const wrongReq = request({ url: server.url, sha: r.sha }, { access: await accessWith('ghp_wr0ng-token') });
    const wrong = await failure(builderFor(backend, fake).build(wrongReq));
    t.is(wrong.errorClass, 'clone_error', wrong.message);
    t.regex(wrong.message, /asks for credentials/);
    for (const form of [...forms, 'ghp_wr0ng-token']) {
      t.false(missing.message.includes(form) || wrong.message.includes(form), `${backend}: no error shows a token`);
      t.false(
        wrongReq.lines.some((l) => l.line.includes(form)),
        `${backend}: no log shows a token`,
      );
    }
  }
  t.is(fake.createdSecrets().filter((s) => s.type === 'Opaque').length, 4, 'a git secret only for the builds that had a token');
  t.true(server.seen.refused > 0);
  cleanedUp(t, fake);
});

test('an SSH repository is refused by both in-cluster builders before anything is created', async (t) => {
  const fake = await fakeKube();
  const r = repo();
  for (const backend of ['buildkit', 'kaniko'] as const) {
    for (const url of ['git@github.com:acme/app.git', 'ssh://git@github.com/acme/app.git']) {
      const refused = await failure(
        builderFor(backend, fake).build(request({ url, sha: r.sha }, { access: { env: { GIT_SSH_COMMAND: 'ssh -i /k' }, secrets: ['KEY'] } })),
      );
      t.is(refused.errorClass, 'clone_error');
      t.regex(refused.message, new RegExp(`^the ${backend} builder clones over HTTPS with a token only, and .* is an SSH repository: .*buildx`));
    }
  }
  t.is(fake.requests.filter((q) => q.method === 'POST').length, 0);
});
