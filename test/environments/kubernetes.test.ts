/**
 * The Kubernetes deployer against the fake API server (test/fixtures/fake-kube), through the
 * environments API: flows 3 and 4 of docs/environments.md with Deployments whose pods run as local
 * processes, readiness from the manifest's health check, a broken image failing its rollout, the
 * own registry's pull secret, deletion, a cluster that cannot be reached, and every call svc made
 * allowed by the deployer's RBAC example.
 */
import { readFileSync } from 'node:fs';
import test from 'ava';
import pino from 'pino';
import { parseAllDocuments } from 'yaml';
import { AdapterError, createAdapter, type AdapterDeps } from '../../core/adapters.ts';
import type { Deployer, DeployTarget, OneOffRun } from '../../core/ports/environments.ts';
import { ReleasesToken } from '../../core/ports/releases.ts';
import { FakeReleases } from '../fixtures/deployer.ts';
import { FakeKube } from '../fixtures/fake-kube/server.ts';
import type { World } from '../jobs/claim-helpers.ts';
import { assertError } from '../orgs/helpers.ts';
import { envWorldWith, eventsOf, settled, sha } from './helpers.ts';

/** `web` writes the page its health check looks for, then serves (sleeps) until stopped. */
const MANIFEST = `
services:
  web:
    image: example/web
    command: [/bin/sh, -c, 'printf %s "$GREETING" > page; exec sleep 600']
    ports: ["18080:8080"]
    environment:
      GREETING: hello
    healthcheck:
      command: test -s page
      interval_seconds: 1
      timeout_seconds: 2
      retries: 2
environments:
  staging:
    type: persistent
    kind: staging
`;
const OWN_REGISTRY = `registry:\n  host: registry.example.com\n  namespace: acme\n${MANIFEST}`;

const digest = (c: string) => 'sha256:' + c.repeat(64);
const kube = new FakeKube({ stepMs: 20 });
const releases = new FakeReleases();
let w: World;
let ns: string;
let envId: string;

test.before(async () => {
  await kube.start();
  w = await envWorldWith('envkube', MANIFEST, {
    overrides: {
      adapters: {
        deployer: {
          use: 'kubernetes',
          options: { server: kube.url, token: kube.token, insecure_skip_tls_verify: true, progress_deadline_seconds: 3, rollout_timeout_ms: 60_000 },
        },
      },
    },
    configure: (c) => c.registerInstance(ReleasesToken, releases),
  });
  const slug = (await w.owner.api.get(`/projects/${w.projectA}`)).body.slug;
  ns = `svc-${slug}-staging`;
  releases.add(w.projectA, { id: 'rel_1', tag: 'v1.1.0', git_sha: sha('a'), manifest_hash: null, image_digests: { web: digest('a') } });
  releases.add(w.projectA, { id: 'rel_2', tag: 'v1.2.0', git_sha: sha('b'), manifest_hash: null, image_digests: { web: digest('b') } });
  releases.add(w.projectA, { id: 'rel_3', tag: 'v1.3.0', git_sha: sha('c'), manifest_hash: null, image_digests: { web: 'missing/web:broken' } });
});
test.after.always(async () => {
  await w?.ctx.srv.stop();
  await kube.stop().catch(() => undefined);
});

const base = (project = w.projectA) => `/projects/${project}/environments/staging`;
const deploy = async (body: Record<string, unknown>, path = '/deploy', project = w.projectA) => {
  const res = await w.owner.api.post(`${base(project)}${path}`, body);
  if (res.statusCode !== 202) throw new Error(`deploy: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return settled(w, 'staging', res.body.id, project);
};
/** The lines of a deploy's log, from the API. */
const logOf = async (deployId: string, stream?: 'system' | 'deployer'): Promise<string[]> => {
  const res = await w.owner.api.get(`${base()}/deploys/${deployId}/logs?limit=1000`);
  return res.body.data.filter((l: any) => !stream || l.stream === stream).map((l: any) => l.line);
};
const deployment = (namespace = ns) => kube.apps.deployments.get(`${namespace}/web`)?.obj;
const livePods = (namespace = ns) => [...kube.pods.values()].filter((p) => !p.removed && !p.deleting && p.obj.metadata.namespace === namespace);
const readyPods = (namespace = ns) => livePods(namespace).filter((p) => p.obj.status.containerStatuses?.[0]?.ready === true);
async function until<T>(what: string, fn: () => T | undefined | null | false, ms = 20_000): Promise<T> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
    const v = fn();
    if (v) return v;
  }
  throw new Error(`timed out waiting for ${what}`);
}

test.serial(
  'flow 3 on the cluster: namespace, Secret, Deployment by digest and Service; healthy from the rollout; the next release replaces the pods',
  async (t) => {
    const first = await deploy({ release_tag: 'v1.1.0' });
    t.like(first, { status: 'succeeded', services: [{ service: 'web', health: 'healthy', detail: 'rollout complete: 1/1 available' }] });
    const reported = await logOf(first.id, 'deployer');
    const [created, envSecret, deployed, service] = reported;
    t.is(created, `namespace ${ns} created`);
    t.regex(envSecret, /^web: secret web-env-[0-9a-f]+ created with its environment \(1 values\)$/);
    t.is(deployed, `web: deployment web created: image example/web@${digest('a')}, 1 replica(s)`);
    t.is(service, 'web: service web created');
    t.true(
      reported.slice(4, -1).every((l) => l.startsWith('web: rollout: ')),
      reported.join('\n'),
    );
    t.is(reported.at(-1), 'web: ready (rollout complete: 1/1 available)');
    t.false(reported.join('\n').includes('hello'), 'the environment values are never reported');
    const env = (await w.owner.api.get(base())).body;
    envId = env.id;
    t.like(env, { health: 'healthy', current_release: { tag: 'v1.1.0' } });

    const namespace = kube.apps.namespaces.get(ns);
    t.like(namespace.metadata.labels, { 'app.kubernetes.io/managed-by': 'svc', 'svc/environment-id': envId });
    const d = deployment();
    t.is(d.spec.template.spec.containers[0].image, `example/web@${digest('a')}`);
    t.deepEqual(d.spec.template.spec.containers[0].readinessProbe.exec.command, ['/bin/sh', '-c', 'test -s page']);
    t.deepEqual(d.spec.template.spec.containers[0].ports, [{ containerPort: 8080, protocol: 'TCP' }]);
    t.is(d.spec.template.spec.imagePullSecrets, undefined, 'native or none registry: no pull secret');
    t.false([...kube.secrets.keys()].includes(`${ns}/svc-registry-pull`));
    const secretName = d.spec.template.spec.containers[0].envFrom[0].secretRef.name;
    const secret = kube.secrets.get(`${ns}/${secretName}`);
    t.is(Buffer.from(secret.data.GREETING, 'base64').toString(), 'hello');
    t.false(JSON.stringify(d).includes('hello'), 'the environment values live in the Secret only');
    t.like(kube.apps.services.get(`${ns}/web`).spec, {
      selector: { 'svc/environment-id': envId, 'svc/service': 'web' },
      ports: [{ port: 18080, targetPort: 8080 }],
    });
    const [pod] = readyPods();
    t.is(pod.obj.spec.containers[0].image, `example/web@${digest('a')}`);
    t.is(readFileSync(`${pod.exec!.cwd}/page`, 'utf8'), 'hello', 'the pod runs with the Secret as its environment');

    const second = await deploy({ release_tag: 'v1.2.0' });
    t.like(second, { status: 'succeeded' });
    const again = await logOf(second.id, 'deployer');
    t.is(again[0], `namespace ${ns} exists`);
    t.true(again.includes(`web: deployment web replaced: image example/web@${digest('b')}, 1 replica(s)`), again.join('\n'));
    t.true(again.includes('web: service web replaced'), again.join('\n'));
    t.like(deployment(), { metadata: { generation: 2 }, status: { observedGeneration: 2, updatedReplicas: 1, availableReplicas: 1, replicas: 1 } });
    await until('the old pod to go', () => livePods().length === 1);
    t.deepEqual(
      livePods().map((p) => p.obj.spec.containers[0].image),
      [`example/web@${digest('b')}`],
    );
    t.like((await w.owner.api.get(`${base()}/health`)).body, { health: 'healthy', health_detail: [{ service: 'web', health: 'healthy' }] });
  },
);

test.serial('a release whose image cannot be pulled fails its rollout; the previous pods keep serving and the Deployment is put back', async (t) => {
  const servingBefore = readyPods().map((p) => p.obj.metadata.name);
  const broken = await deploy({ release_tag: 'v1.3.0' });
  t.is(broken.status, 'failed');
  t.regex(
    broken.error_message,
    /not healthy: web \(rollout failed: ReplicaSet "web-\w+" has timed out progressing.*ImagePullBackOff.*\) \(release v1\.2\.0 keeps serving\)/,
  );
  t.deepEqual(
    readyPods().map((p) => p.obj.metadata.name),
    servingBefore,
    'the previous pod served throughout',
  );
  const log = await logOf(broken.id);
  const failedAt = log.findIndex((l) => l.startsWith('web: not ready: rollout failed: ReplicaSet'));
  t.true(failedAt > 0, log.join('\n'));
  t.regex(log[failedAt], /ImagePullBackOff/);
  t.regex(log[failedAt + 1], /^failed: not healthy: web \(rollout failed: /);
  t.is(log[failedAt + 2], 'web: deployment web put back as it was: its previous pods keep serving');
  t.regex(log.at(-1)!, /^deploy failed: not healthy: web .*\(release v1\.2\.0 keeps serving\)$/);
  t.is(deployment().spec.template.spec.containers[0].image, `example/web@${digest('b')}`, 'the previous template is back');
  await until('the broken pod to go', () => livePods().length === 1);
  t.like((await w.owner.api.get(base())).body, { health: 'healthy', current_release: { tag: 'v1.2.0' } });
  t.like((await w.owner.api.get(`${base()}/health`)).body, { health: 'healthy' });
  const events = await eventsOf(w, 'system.deploy.%');
  t.is(events.at(-1).type, 'system.deploy.failed');

  t.like(await deploy({}, '/rollback'), { status: 'succeeded', release: { tag: 'v1.1.0' } });
  await until('the rollback pod alone', () => livePods().length === 1 && readyPods().length === 1);
  t.is(readyPods()[0].obj.spec.containers[0].image, `example/web@${digest('a')}`);
});

/** A direct runOnce of the deployer (the `job` action's call) in an environment of its own namespace. */
const JOB_NS = 'svc-jobs';
const jobTarget = (command: string[] | null = null): DeployTarget => ({
  project: { id: 'prj_jobs', org_id: 'org_jobs', slug: 'jobs' },
  environment: { id: 'env_jobs', name: 'jobs', namespace: JOB_NS },
  services: {
    migrate: {
      image: 'example/app',
      command,
      ports: [],
      environment: { DATABASE_URL: 'postgres://db/app', MODE: 'job' },
      healthcheck: null,
      deploy_strategy: null,
    },
  },
  pullSecret: { host: 'registry.example.com', username: 'robot', password: 'pull-token-2' },
});
async function runJob(target: DeployTarget, image: string, run: Partial<OneOffRun> = {}) {
  const deployer = (await createAdapter(
    'deployer',
    { use: 'kubernetes', options: { server: kube.url, token: kube.token, insecure_skip_tls_verify: true, progress_deadline_seconds: 3 } },
    { logger: pino({ level: 'silent' }) } as AdapterDeps,
  )) as Deployer;
  const lines: string[] = [];
  const release = { id: 'rel_j', tag: 'j1', git_sha: sha('e'), manifest_hash: null, image_digests: { migrate: image } };
  const exit = deployer.runOnce!(target, release, { service: 'migrate', command: null, log: (l) => void lines.push(l), ...run });
  return { exit, lines, deployer };
}
const jobPods = () => [...kube.pods.values()].filter((p) => p.obj.metadata.namespace === JOB_NS && !p.removed && !p.deleting);
const createdJobPods = () => kube.createdPods().filter((b) => b.metadata.labels?.['svc/one-off']);

test.serial('a one-off job runs a pod of the service image with its Secret, streams its log and is deleted; its exit code is the result', async (t) => {
  const ok = await runJob(jobTarget(['/bin/sh', '-c', 'echo "url=$DATABASE_URL"; echo "mode=$MODE" >&2; echo done']), digest('e'));
  t.deepEqual(await ok.exit, { exit_code: 0, timed_out: false });
  t.deepEqual([...ok.lines].sort(), ['done', 'mode=job', 'url=postgres://db/app'], 'the environment came from the Secret (stdout and stderr)');
  const [pod] = createdJobPods();
  const spec = pod.spec;
  t.is(spec.restartPolicy, 'Never');
  t.is(spec.containers[0].image, `example/app@${digest('e')}`);
  t.deepEqual(spec.imagePullSecrets, [{ name: 'svc-registry-pull' }]);
  t.deepEqual(spec.containers[0].args, ['/bin/sh', '-c', 'echo "url=$DATABASE_URL"; echo "mode=$MODE" >&2; echo done']);
  t.false(JSON.stringify(pod).includes('postgres://db/app'), 'no environment value in the pod spec');
  const secret = kube.secrets.get(`${JOB_NS}/${spec.containers[0].envFrom[0].secretRef.name}`);
  t.is(Buffer.from(secret.data.DATABASE_URL, 'base64').toString(), 'postgres://db/app');
  t.like(pod.metadata.labels, { 'svc/environment-id': 'env_jobs', 'svc/one-off': 'migrate' });
  t.is(pod.metadata.labels['svc/service'], undefined, 'no Deployment or Service selects the job pod');
  await until('the job pod to be deleted', () => jobPods().length === 0);

  const failed = await runJob(jobTarget(['/bin/sh', '-c', 'echo failing; exit 3']), digest('e'));
  t.deepEqual(await failed.exit, { exit_code: 3, timed_out: false });
  t.deepEqual(failed.lines, ['failing']);
  const own = await runJob(jobTarget(['/bin/sh', '-c', 'echo from the manifest']), digest('e'), { command: ['/bin/sh', '-c', 'echo from the step'] });
  t.deepEqual(await own.exit, { exit_code: 0, timed_out: false });
  t.deepEqual(own.lines, ['from the step'], "the step's command wins over the service's");
  await until('every job pod to be deleted', () => jobPods().length === 0);
});

test.serial('a one-off job whose image cannot be pulled fails with the reason; a stopped or timed-out job has its pod deleted', async (t) => {
  const broken = await runJob(jobTarget(['/bin/true']), 'missing/app:broken');
  const err = await t.throwsAsync(broken.exit, { name: 'DeployFailed' });
  t.regex(err!.message, /^the job of migrate did not start: pod migrate-job-\w+ cannot start: (ErrImagePull|ImagePullBackOff)/);
  await until('the broken pod to be deleted', () => jobPods().length === 0);

  const stop = new AbortController();
  const stopped = await runJob(jobTarget(['/bin/sh', '-c', 'echo started; exec sleep 600']), digest('e'), { signal: stop.signal });
  await until('the job to start', () => stopped.lines.includes('started'));
  stop.abort();
  t.like(await stopped.exit, { exit_code: null, timed_out: false });
  const slow = await runJob(jobTarget(['/bin/sh', '-c', 'exec sleep 600']), digest('e'), { timeoutMs: 1500 });
  t.like(await slow.exit, { exit_code: null, timed_out: true });
  await until('every job pod to be deleted', () => jobPods().length === 0);

  const left = await runJob(jobTarget(['/bin/sh', '-c', 'echo left; exec sleep 600']), digest('e'));
  await until('the leftover job to start', () => left.lines.includes('left'));
  await left.deployer.remove(jobTarget());
  t.like(await left.exit, { exit_code: null });
  t.is(jobPods().length, 0, 'removing the environment deletes a job pod left running');
  t.true(kube.deleted('pods', createdJobPods().at(-1).metadata.name));
});

test.serial('flow 4 on the cluster: suspend scales to zero and refuses deploys and jobs; resume restores the replicas; health follows the pods', async (t) => {
  t.like((await w.owner.api.post(`${base()}/suspend`, { reason: 'night' })).body, { suspended: true });
  t.like(deployment(), { spec: { replicas: 0 }, metadata: { annotations: { 'svc/suspended-replicas': '1' } } });
  await until('the pods to stop', () => livePods().length === 0);
  assertError(t, await w.owner.api.post(`${base()}/deploy`, { release_tag: 'v1.2.0' }), 409, 'environment staging is suspended: night');
  assertError(
    t,
    await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: 'migrate', env_name: 'staging' }),
    409,
    'environment staging is suspended: night',
  );

  const resumed = await w.owner.api.post(`${base()}/resume`);
  t.like(resumed.body, { suspended: false, health: 'healthy' });
  t.is(deployment().spec.replicas, 1);
  t.is(deployment().metadata.annotations['svc/suspended-replicas'], undefined);
  t.is(readyPods().length, 1);
  t.is((await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: 'migrate', env_name: 'staging' })).statusCode, 201);
  t.like(await deploy({ release_tag: 'v1.2.0' }), { status: 'succeeded' });

  const [pod] = readyPods();
  process.kill(-pod.proc!.pid!, 'SIGKILL'); // the container dies: the runtime, not svc, says it is not ready
  await until('the deployment to notice', () => deployment().status.availableReplicas === 0);
  const health = (await w.owner.api.get(`${base()}/health`)).body;
  t.like(health, { health: 'degraded', health_detail: [{ service: 'web', health: 'degraded' }] });
  t.regex(health.health_detail[0].detail, /0\/1 available/);
});

test.serial('an own registry gets a docker-config pull secret the pods use', async (t) => {
  const other = w.projectA2;
  for (const [name, value] of [
    ['REGISTRY_USERNAME', 'robot'],
    ['REGISTRY_PASSWORD', 'pull-token-1'],
  ])
    t.is((await w.owner.api.post(`/projects/${other}/secrets`, { name, value })).statusCode, 201);
  t.is((await w.owner.api.post(`/projects/${other}/manifest`, { yaml: OWN_REGISTRY })).statusCode, 200);
  releases.add(other, { id: 'rel_o1', tag: 'o1', git_sha: sha('d'), manifest_hash: null, image_digests: { web: digest('d') } });
  const done = await deploy({ release_tag: 'o1' }, '/deploy', other);
  t.like(done, { status: 'succeeded' });
  const log = (await w.owner.api.get(`${base(other)}/deploys/${done.id}/logs`)).body.data.map((l: any) => l.line);
  t.true(log.includes('image pull secret svc-registry-pull for registry.example.com created'), log.join('\n'));
  t.false(JSON.stringify(log).includes('pull-token-1'), 'the credential is never in the log');
  const slug = (await w.owner.api.get(`/projects/${other}`)).body.slug;
  const otherNs = `svc-${slug}-staging`;
  const pull = kube.secrets.get(`${otherNs}/svc-registry-pull`);
  t.is(pull.type, 'kubernetes.io/dockerconfigjson');
  const config = JSON.parse(Buffer.from(pull.data['.dockerconfigjson'], 'base64').toString());
  t.deepEqual(config.auths['registry.example.com'], {
    username: 'robot',
    password: 'pull-token-1',
    auth: Buffer.from('robot:pull-token-1').toString('base64'),
  });
  t.deepEqual(deployment(otherNs).spec.template.spec.imagePullSecrets, [{ name: 'svc-registry-pull' }]);
  const res = await w.owner.api.get(`${base(other)}/deploys`);
  t.false(JSON.stringify(res.body).includes('pull-token-1'), 'the credential is never echoed');
});

test.serial('deleting the environment removes what svc created, and its namespace', async (t) => {
  t.is((await w.owner.api.delete(base())).statusCode, 204);
  const selector = `svc/environment-id=${envId}`;
  for (const kind of ['deployments', 'services', 'secrets'])
    t.true(
      kube.requests.some(
        (r) =>
          r.method === 'GET' &&
          r.path === `${kind === 'deployments' ? '/apis/apps/v1' : '/api/v1'}/namespaces/${ns}/${kind}` &&
          r.query.labelSelector === selector,
      ),
      `${kind} listed by label`,
    );
  t.true(kube.requests.some((r) => r.method === 'DELETE' && r.path === `/api/v1/namespaces/${ns}`));
  await until('the namespace to go', () => !kube.apps.namespaces.has(ns));
  t.is(deployment(), undefined);
  t.is(kube.apps.services.get(`${ns}/web`), undefined);
  t.deepEqual(
    [...kube.secrets.keys()].filter((k) => k.startsWith(`${ns}/`)),
    [],
  );
  await until('its pods to go', () => livePods().length === 0);
  t.is((await w.owner.api.get(base())).statusCode, 404);
});

test.serial('every call svc made is allowed by the RBAC rules of examples/cluster/deployer-rbac.yaml', (t) => {
  const docs = parseAllDocuments(readFileSync(new URL('../../examples/cluster/deployer-rbac.yaml', import.meta.url), 'utf8')).map((d) => d.toJS());
  const role = docs.find((d) => d.kind === 'ClusterRole');
  const allowed = new Set<string>(
    role.rules.flatMap((r: any) => r.apiGroups.flatMap((g: string) => r.resources.flatMap((res: string) => r.verbs.map((v: string) => `${g}/${res}/${v}`)))),
  );
  const used = new Set<string>();
  for (const r of kube.requests) {
    const m = /^\/(?:api\/v1|apis\/(apps)\/v1)\/namespaces(?:\/([^/]+)(?:\/([^/]+)(?:\/([^/]+))?)?)?$/.exec(r.path);
    if (!m) continue;
    const [, group = '', ns, kind, name] = m;
    const resource = kind ?? 'namespaces';
    const named = kind ? name : ns;
    const verb = { POST: 'create', PUT: 'update', DELETE: 'delete', GET: named ? 'get' : 'list' }[r.method]!;
    used.add(`${group}/${resource}/${verb}`);
  }
  t.true(used.size >= 10, [...used].join(' '));
  t.deepEqual(
    [...used].filter((u) => !allowed.has(u)),
    [],
  );
});

test.serial('a cluster that cannot be reached: suspend and delete answer 502 naming the deployer and why, and change nothing', async (t) => {
  await kube.stop();
  const suspend = await w.owner.api.post(`${base(w.projectA2)}/suspend`, { reason: 'night' });
  t.is(suspend.statusCode, 502, JSON.stringify(suspend.body));
  t.regex(
    suspend.body.message,
    /^deployer kubernetes could not suspend environment staging: kubernetes API: listing deployments in namespace svc-\w+-staging failed: .*ECONNREFUSED/,
  );
  t.is(suspend.body.deployer, 'kubernetes');
  t.like((await w.owner.api.get(base(w.projectA2))).body, { suspended: false });
  t.is((await eventsOf(w, 'system.environment.suspended', w.projectA2)).length, 0, 'no event for a suspension that did not happen');
  const removed = await w.owner.api.delete(base(w.projectA2));
  t.is(removed.statusCode, 502);
  t.regex(removed.body.message, /^deployer kubernetes could not remove environment staging: kubernetes API: reading namespace/);
  t.is((await w.owner.api.get(base(w.projectA2))).statusCode, 200, 'the environment is still there');
});

test('adapters.deployer kubernetes: its options are validated with their paths, the cluster options as for the runtime', async (t) => {
  const deps = {} as AdapterDeps;
  const refused = async (options: Record<string, unknown>) =>
    (await t.throwsAsync(createAdapter('deployer', { use: 'kubernetes', options }, deps), { instanceOf: AdapterError }))!.message;
  t.regex(
    await refused({ server: kube.url, token: 't', insecure_skip_tls_verify: true, namespace: 'Not_A_Label' }),
    /^adapters\.deployer\.options\.namespace: /,
  );
  t.regex(
    await refused({ server: kube.url, insecure_skip_tls_verify: true, replicas: 0 }),
    /adapters\.deployer\.options\.replicas: .*greater than or equal to 1/,
  );
  t.regex(await refused({ server: kube.url, in_cluster: true }), /contains a conflict between optional exclusive peers \[kubeconfig, in_cluster, server\]/);
  await t.throwsAsync(createAdapter('deployer', { use: 'kubernetes', options: { server: 'http://127.0.0.1:1' } }, deps), {
    message: 'adapters.deployer.options.server: an http:// server needs insecure_skip_tls_verify: true (no TLS at all)',
  });
  const ok = await createAdapter('deployer', { use: 'kubernetes', options: { server: kube.url, token: 't', insecure_skip_tls_verify: true } }, deps);
  t.is(ok.name, 'kubernetes');
});
