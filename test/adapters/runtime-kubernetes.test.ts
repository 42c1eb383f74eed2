/**
 * The kubernetes runtime against a LOCAL FAKE API server (test/fixtures/fake-kube/server.ts), not a
 * cluster: the fake speaks the Kubernetes REST protocol for exactly the calls the runtime makes
 * (secrets and pods create/get/delete, pod watch, the follow log endpoint, Status errors, bearer
 * token) and "runs" each pod's container as a local process (env from its Secret, working directory
 * through its volume mount, activeDeadlineSeconds, graceful deletion). What the fake leaves out
 * (RBAC, admission, images, real volumes and user switching) is only checked against a real cluster;
 * docs/runtime-kubernetes.md says how.
 */
import test from 'ava';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import runtimeAdapter from '../../adapters/runtime/kubernetes/index.ts';
import { createAdapter, type AdapterDeps } from '../../core/adapters.ts';
import type { OutputLine, ProcessSpec, Runtime } from '../../core/ports/runtime.ts';
import { filesOwner, podUser, workspaceNotHandedOver } from '../../adapters/runtime/kubernetes/user.ts';
import { FakeKube, type FakeKubeOptions } from '../fixtures/fake-kube/server.ts';

const deps = { logger: pino({ level: 'silent' }), databaseUrl: '', config: undefined, db: {} } as unknown as AdapterDeps;
const CLAIM = 'svc-workspaces';

let root = '';
const fakes: FakeKube[] = [];
test.before(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'svc-kube-test-'));
  await chmod(root, 0o755); // reachable by the pods' user, which the fake switches to when it runs as root
});
test.after.always(async () => {
  await Promise.all(fakes.map((f) => f.stop()));
  await rm(root, { recursive: true, force: true });
});

async function fakeKube(options: FakeKubeOptions = {}): Promise<FakeKube> {
  const fake = await new FakeKube({ claims: { [CLAIM]: root }, ...options }).start();
  fakes.push(fake);
  return fake;
}

function optionsFor(fake: FakeKube, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    server: fake.url,
    token: fake.token,
    insecure_skip_tls_verify: true,
    image: 'registry.example/svc-agent:1',
    namespace: 'agents',
    workspace: { persistent_volume_claim: CLAIM, mount_path: root },
    kill_grace_seconds: 1,
    ...extra,
  };
}

async function runtimeFor(fake: FakeKube, extra: Record<string, unknown> = {}): Promise<Runtime> {
  const { value, error } = runtimeAdapter.options.validate(optionsFor(fake, extra));
  if (error) throw error;
  return runtimeAdapter.create(value, deps);
}

let dirs = 0;
async function workdir(): Promise<string> {
  const dir = path.join(root, `w${++dirs}`);
  await mkdir(dir);
  return dir;
}

/** The user the worker names by default (worker.run_as_uid 1000); a test that means "none" removes it. */
const RUN_AS = { uid: 1000, gid: 1000 };
const sh = async (script: string, extra: Partial<ProcessSpec> = {}): Promise<ProcessSpec> => ({
  command: '/bin/sh',
  args: ['-c', script],
  env: { SVC_ATTEMPT_ID: 'A1B2-attempt', SVC_JOB_ID: 'job-42' },
  cwd: await workdir(),
  user: RUN_AS,
  ...extra,
});
const isRoot = process.getuid?.() === 0;

async function collect(lines: AsyncIterable<OutputLine>): Promise<OutputLine[]> {
  const out: OutputLine[] = [];
  for await (const line of lines) out.push(line);
  return out;
}
const text = (lines: OutputLine[], stream: OutputLine['stream'] = 'stdout') => lines.filter((l) => l.stream === stream).map((l) => l.line);

/** Every pod and secret the runtime created was deleted, and none is left in the fake. */
function cleanedUp(t: { true(v: boolean, m?: string): void; is(a: unknown, b: unknown, m?: string): void }, fake: FakeKube): void {
  for (const pod of fake.createdPods()) t.true(fake.deleted('pods', pod.metadata.name), `pod ${pod.metadata.name} deleted`);
  for (const secret of fake.createdSecrets()) t.true(fake.deleted('secrets', secret.metadata.name), `secret ${secret.metadata.name} deleted`);
  t.is(fake.pods.size, 0, 'no pod left');
  t.is(fake.secrets.size, 0, 'no secret left');
}

async function eventually(check: () => boolean, ms = 10_000): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) if (check()) return true;
  return check();
}

function processGone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
  } catch {
    return true;
  }
}

test('lines stream while the pod runs; the exit code comes from the terminated container state; pod and secret are deleted', async (t) => {
  const fake = await fakeKube();
  const runtime = await runtimeFor(fake);
  const proc = await runtime.start(await sh('echo one; echo err >&2; sleep 1; printf "two\\r\\nno-newline"; exit 3'));
  const iterator = proc.lines()[Symbol.asyncIterator]();
  const first = await iterator.next();
  t.deepEqual(first.value, { stream: 'stdout', line: 'one' });
  const [pod] = fake.pods.values();
  t.is(pod.obj.status.phase, 'Running', 'the first line arrived while the container still ran');
  const rest: OutputLine[] = [];
  for (let n = await iterator.next(); !n.done; n = await iterator.next()) rest.push(n.value);
  t.deepEqual(
    rest,
    [
      { stream: 'stdout', line: 'err' },
      { stream: 'stdout', line: 'two' },
      { stream: 'stdout', line: 'no-newline' },
    ],
    'the log mixes stderr into one stream',
  );
  t.deepEqual(await proc.exited, { exitCode: 3, signal: null, timedOut: false });
  cleanedUp(t, fake);
  const logs = fake.requests.filter((r) => r.path.endsWith('/log'));
  t.like(logs[0].query, { container: 'attempt', follow: 'true', timestamps: 'true' });
  t.true(
    fake.requests.some((r) => r.query.watch === 'true' && r.query.fieldSelector === `metadata.name=${fake.createdPods()[0].metadata.name}`),
    'waits with a watch',
  );
});

test('the pod spec: Secret env, command, workingDir, resources of the class, security context, labels, volume, deadline', async (t) => {
  const fake = await fakeKube();
  const runtime = await runtimeFor(fake, {
    service_account: 'svc-agent',
    labels: { team: 'core' },
    resource_classes: { 'job.gpu': { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: 1, 'nvidia.com/gpu': '1' } } },
  });
  const spec = await sh('echo "$FOO|$MULTI|${HOSTNAME_FROM_LINKS:-none}"', {
    env: { SVC_ATTEMPT_ID: 'A1B2-attempt', FOO: 'bar', MULTI: 'a b\nc' },
    timeoutMs: 2500,
    resourceClass: 'job.c2',
  });
  const proc = await runtime.start(spec);
  t.deepEqual(text(await collect(proc.lines())), ['bar|a b', 'c|none']);
  t.is((await proc.exited).exitCode, 0);

  const [secret] = fake.createdSecrets();
  const [pod] = fake.createdPods();
  t.is(secret.metadata.name, `${pod.metadata.name}-env`);
  t.regex(pod.metadata.name, /^svc-a1b2-attempt-[0-9a-f]{6}$/);
  t.is(Buffer.from(secret.data.FOO, 'base64').toString(), 'bar');
  t.false(JSON.stringify(pod).includes('bar'), 'values stay out of the pod spec');
  t.deepEqual(pod.metadata.labels, {
    team: 'core',
    'app.kubernetes.io/managed-by': 'svc',
    'app.kubernetes.io/component': 'attempt',
    'svc/run': pod.metadata.name,
    'svc/attempt-id': 'A1B2-attempt',
  });
  t.deepEqual(secret.metadata.labels, pod.metadata.labels);
  const c = pod.spec.containers[0];
  t.like(pod.spec, {
    restartPolicy: 'Never',
    activeDeadlineSeconds: 3 + 300 + 1, // timeout, pending_timeout_ms, grace: the worker acts first
    terminationGracePeriodSeconds: 1,
    enableServiceLinks: false,
    serviceAccountName: 'svc-agent',
    automountServiceAccountToken: true,
    securityContext: { runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true },
  });
  t.like(c, {
    name: 'attempt',
    image: 'registry.example/svc-agent:1',
    command: ['/bin/sh'],
    args: spec.args,
    workingDir: spec.cwd,
    envFrom: [{ secretRef: { name: secret.metadata.name } }],
  });
  t.is(c.env, undefined);
  t.deepEqual(c.resources, { requests: { cpu: '2', memory: '4Gi' }, limits: { cpu: '4', memory: '8Gi' } });
  t.like(c.securityContext, { runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
  t.deepEqual(c.volumeMounts, [{ name: 'workspace', mountPath: spec.cwd, subPath: path.basename(spec.cwd) }]);
  t.deepEqual(pod.spec.volumes, [{ name: 'workspace', persistentVolumeClaim: { claimName: CLAIM } }]);

  const gpu = await runtime.start(await sh('true', { resourceClass: 'job.gpu' }));
  await gpu.exited;
  t.deepEqual(fake.createdPods()[1].spec.containers[0].resources, { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: 1, 'nvidia.com/gpu': '1' } });
  const plain = await runtime.start(await sh('true', { user: { uid: 2000, gid: 2001 } }));
  await plain.exited;
  t.like(
    fake.createdPods()[2].spec.securityContext,
    { runAsUser: 2000, runAsGroup: 2001, runAsNonRoot: true },
    "the pod runs as the worker's user (spec.user)",
  );
  t.deepEqual(fake.createdPods()[2].spec.containers[0].resources.requests, { cpu: '1', memory: '2Gi' }, 'job.c1 without a class');
  t.like(fake.createdPods()[2].spec, { automountServiceAccountToken: true });
  cleanedUp(t, fake);
});

test('files are written into the workspace before the pod starts, and a hostPath workspace works the same', async (t) => {
  const fake = await fakeKube();
  const runtime = await runtimeFor(fake, { workspace: { host_path: root, mount_path: root } });
  const spec = await sh('cat conf/nested/a.json; cat b.txt; pwd; id -u; id -g', { files: { 'conf/nested/a.json': '{"a":1}\n', 'b.txt': 'hello\n' } });
  const proc = await runtime.start(spec);
  // The fake switches to runAsUser/runAsGroup only when it runs as root; otherwise it runs as itself.
  const [uid, gid] = isRoot ? ['1000', '1000'] : [String(process.getuid?.()), String(process.getgid?.())];
  t.deepEqual(text(await collect(proc.lines())), ['{"a":1}', 'hello', spec.cwd, uid, gid]);
  t.is(await readFile(path.join(spec.cwd, 'b.txt'), 'utf8'), 'hello\n');
  // Written as spec.user when the worker is root (it has handed the workspace over), else as the worker.
  const owner = isRoot ? RUN_AS : { uid: process.getuid?.(), gid: process.getgid?.() };
  for (const file of ['b.txt', 'conf', 'conf/nested', 'conf/nested/a.json']) {
    const s = await stat(path.join(spec.cwd, file));
    t.deepEqual({ uid: s.uid, gid: s.gid }, owner, file);
  }
  t.deepEqual(fake.createdPods()[0].spec.volumes, [{ name: 'workspace', hostPath: { path: spec.cwd, type: 'Directory' } }]);
  t.false(JSON.stringify(fake.createdPods()[0]).includes('hello'));

  await t.throwsAsync(runtime.start(await sh('true', { files: { '../evil.txt': 'x' } })), { message: /escapes the working directory/ });
  t.false(existsSync(path.join(root, 'evil.txt')));
  t.is(fake.createdPods().length, 1, 'nothing created for a refused start');
});

test('timeout: the pod is deleted, the exit says timedOut, pod and secret are gone', async (t) => {
  const fake = await fakeKube();
  const runtime = await runtimeFor(fake);
  const started = Date.now();
  const proc = await runtime.start(await sh('echo $$; sleep 30', { timeoutMs: 1200 }));
  const lines = collect(proc.lines());
  const exit = await proc.exited;
  t.true(Date.now() - started < 10_000);
  t.deepEqual(exit, { exitCode: null, signal: 'SIGTERM', timedOut: true });
  const pid = Number(text(await lines)[0]);
  t.true(await eventually(() => processGone(pid)));
  t.is(fake.createdPods()[0].spec.activeDeadlineSeconds, 303, 'the cluster enforces it too, after pending_timeout_ms and the grace period');
  t.like(fake.requests.find((r) => r.method === 'DELETE' && r.path.includes('/pods/'))!.query, { gracePeriodSeconds: '1', propagationPolicy: 'Background' });
  cleanedUp(t, fake);
});

test('activeDeadlineSeconds enforced by the cluster is a timeout too', async (t) => {
  // The worker's timer is far off; the cluster's clock reaches the pod's deadline now (as when the worker was gone a while).
  const fake = await fakeKube();
  const runtime = await runtimeFor(fake);
  const proc = await runtime.start(await sh('echo up; sleep 30', { timeoutMs: 60_000 }));
  const iterator = proc.lines()[Symbol.asyncIterator]();
  t.is(((await iterator.next()).value as OutputLine).line, 'up');
  fake.exceedDeadline([...fake.pods.values()][0]);
  const lines = collect({ [Symbol.asyncIterator]: () => iterator });
  t.deepEqual(await proc.exited, { exitCode: null, signal: 'SIGTERM', timedOut: true });
  t.deepEqual(text(await lines, 'stderr'), [
    `[kubernetes: pod ${fake.createdPods()[0].metadata.name} Failed: DeadlineExceeded: Pod was active on the node longer than the specified deadline]`,
  ]);
  cleanedUp(t, fake);
});

test('kill() deletes the pod with the grace period, escalating to SIGKILL, and resolves after the end', async (t) => {
  const fake = await fakeKube();
  const runtime = await runtimeFor(fake);
  const proc = await runtime.start(await sh('trap "" TERM; sleep 60 & echo $!; wait'));
  const iterator = proc.lines()[Symbol.asyncIterator]();
  const sleeper = Number(((await iterator.next()).value as OutputLine).line);
  const started = Date.now();
  await proc.kill();
  t.true(Date.now() - started < 8000);
  const exit = await proc.exited;
  t.deepEqual(exit, { exitCode: null, signal: 'SIGKILL', timedOut: false });
  t.true(await eventually(() => processGone(sleeper)));
  t.true((await iterator.next()).done);
  cleanedUp(t, fake);

  const polite = await runtime.start(await sh('echo up; sleep 60'));
  const it2 = polite.lines()[Symbol.asyncIterator]();
  await it2.next();
  await polite.kill();
  t.deepEqual(await polite.exited, { exitCode: null, signal: 'SIGTERM', timedOut: false });
  cleanedUp(t, fake);
});

test('a dropped log stream is resumed from the last timestamp without losing or repeating lines', async (t) => {
  for (const how of ['end', 'destroy'] as const) {
    const fake = await fakeKube({ cutFirstLog: { afterLines: 4, how } });
    const runtime = await runtimeFor(fake);
    // Lines written together share one timestamp; the cut falls inside such a group.
    const proc = await runtime.start(await sh('echo 1; echo 2; echo 3; sleep 0.3; printf "4\\n5\\n6\\n"; sleep 0.3; echo 7; printf 8'));
    t.deepEqual(text(await collect(proc.lines())), ['1', '2', '3', '4', '5', '6', '7', '8'], how);
    t.is((await proc.exited).exitCode, 0);
    t.true(fake.requests.filter((r) => r.path.endsWith('/log')).length >= 2, `${how}: the log was opened again`);
    t.truthy(fake.requests.filter((r) => r.path.endsWith('/log'))[1].query.sinceTime);
    cleanedUp(t, fake);
  }
});

test("a command the image lacks ends the attempt with the container runtime's error", async (t) => {
  const fake = await fakeKube();
  const runtime = await runtimeFor(fake);
  const proc = await runtime.start({ ...(await sh('')), command: 'svc-no-such-command', args: [] });
  const lines = await collect(proc.lines());
  t.deepEqual(await proc.exited, { exitCode: 128, signal: null, timedOut: false });
  t.true(
    text(lines, 'stderr').some((l) => l.includes('StartError') && l.includes('svc-no-such-command')),
    JSON.stringify(lines),
  );
  cleanedUp(t, fake);
});

test('an image that cannot be pulled or a pod that cannot be scheduled fails start() clearly, and leaves nothing behind', async (t) => {
  const fake = await fakeKube();
  const pull = await runtimeFor(fake, { image: 'missing/agent:1' });
  await t.throwsAsync(pull.start(await sh('true')), {
    message: /^pod svc-a1b2-attempt-\w+ cannot start: ImagePullBackOff: Back-off pulling image "missing\/agent:1"$/,
  });
  cleanedUp(t, fake);

  const big = await runtimeFor(fake, { resource_classes: { 'job.c1': { requests: { cpu: '64' }, limits: {} } } });
  await t.throwsAsync(big.start(await sh('true')), { message: /is unschedulable: 0\/1 nodes are available: 1 Insufficient cpu/ });
  cleanedUp(t, fake);

  const noClaim = await runtimeFor(fake, { workspace: { persistent_volume_claim: 'nope', mount_path: root } });
  await t.throwsAsync(noClaim.start(await sh('true')), { message: /persistentvolumeclaim "nope" not found/ });

  const waiting = await runtimeFor(fake, { workspace: { persistent_volume_claim: 'nope', mount_path: root }, unschedulable: 'wait', pending_timeout_ms: 800 });
  await t.throwsAsync(waiting.start(await sh('true')), { message: /still Pending after 1 s \(pending_timeout_ms\); last: Unschedulable: 0\/1 nodes/ });
  cleanedUp(t, fake);
});

test('what can be refused locally is refused before anything is created', async (t) => {
  const fake = await fakeKube();
  const runtime = await runtimeFor(fake);
  await t.throwsAsync(runtime.start(await sh('true', { resourceClass: 'job.c9' })), {
    message: "resource class 'job.c9' is not configured (adapters.runtime.options.resource_classes has job.c1, job.c2)",
  });
  await t.throwsAsync(runtime.start({ ...(await sh('true')), cwd: tmpdir() }), { message: /working directory .* is not inside the workspace volume's root/ });
  await t.throwsAsync(runtime.start(await sh('true', { env: { 'BAD NAME': 'x' } })), { message: /BAD NAME cannot be Secret keys/ });
  await t.throwsAsync(runtime.start(await sh('true', { user: { uid: 0, gid: 0 } })), { message: /do not run as root in a pod/ });
  t.is(fake.requests.length, 0);
});

test("without spec.user (worker.run_as_uid null) the pod runs as the server's own user, refused when that is root", async (t) => {
  const fake = await fakeKube();
  const runtime = await runtimeFor(fake);
  const spec = { ...(await sh('id -u', { files: { 'f.txt': 'x' } })), user: undefined };
  if (isRoot) {
    await t.throwsAsync(runtime.start(spec), {
      message:
        "runtime kubernetes: without worker.run_as_uid pods run as the server's own user, which is root, and pods do not run as root (runAsNonRoot); set worker.run_as_uid (SVC_RUN_AS_UID) to another user",
    });
    t.is(fake.requests.length, 0, 'nothing created');
    t.false(existsSync(path.join(spec.cwd, 'f.txt')), 'nothing written');
  } else {
    const proc = await runtime.start(spec);
    t.deepEqual(text(await collect(proc.lines())), [String(process.getuid?.())]);
    t.like(fake.createdPods()[0].spec.securityContext, { runAsUser: process.getuid?.(), runAsGroup: process.getgid?.(), runAsNonRoot: true });
    cleanedUp(t, fake);
  }
});

test("the user rule for other servers: the pod's user, the files' owner, and when the workspace stays the server's", async (t) => {
  const spec = { command: 'true', args: [], env: {}, cwd: '/w/a' } satisfies ProcessSpec;
  const rootServer = { uid: 0, gid: 0 };
  const server = { uid: 1234, gid: 1235 };
  const withUser = { ...spec, user: { uid: 1000, gid: 1001 } };

  t.deepEqual(podUser(withUser, rootServer), { uid: 1000, gid: 1001 });
  t.deepEqual(podUser(withUser, server), { uid: 1000, gid: 1001 }, 'spec.user wins whoever the server is');
  t.deepEqual(podUser(spec, server), server, "none: the server's own uid and gid");
  t.throws(() => podUser(spec, rootServer), { message: /which is root.*set worker\.run_as_uid \(SVC_RUN_AS_UID\)/ });
  t.throws(() => podUser(spec, null), { message: /set worker\.run_as_uid \(SVC_RUN_AS_UID\)/ });
  t.throws(() => podUser({ ...spec, user: { uid: 0, gid: 0 } }, server), { message: /do not run as root in a pod/ });

  t.deepEqual(filesOwner(withUser, rootServer), withUser.user, "a root server writes files as the attempt's user");
  t.is(filesOwner(withUser, server), null, 'any other server writes them as itself');
  t.is(filesOwner(spec, server), null);

  t.true(workspaceNotHandedOver(withUser, server), "not root and another user: the workspace stays the server's (warned once)");
  t.false(workspaceNotHandedOver({ ...spec, user: { uid: 1234, gid: 1235 } }, server), 'the same user');
  t.false(workspaceNotHandedOver(withUser, rootServer), 'a root server has handed it over');
  t.false(workspaceNotHandedOver(spec, server), 'no user: the pod runs as the server');
});

test("API errors surface with the server's status: a wrong token, a refused object", async (t) => {
  const fake = await fakeKube();
  const wrong = await runtimeFor(fake, { token: 'not-the-token' });
  await t.throwsAsync(wrong.start(await sh('true')), { message: /^kubernetes API: creating secret svc-a1b2-attempt-\w+-env in namespace agents failed: 401/ });

  const runtime = await runtimeFor(fake, { resource_classes: { 'job.c1': { requests: { gpu: '1' }, limits: {} } } });
  const err = await runtime.start(await sh('true')).catch((e: Error) => e);
  t.regex(
    String(err),
    /creating pod svc-\S+ in namespace agents failed: 422 Invalid: Pod "svc-\S+" is invalid: spec.containers\[0\].resources.requests\[gpu\]: Invalid value: "gpu": must be a standard resource type or fully qualified/,
  );
  cleanedUp(t, fake);
});

test('the fake answers like an API server: Status objects for 404 and 409, 401 without the token', async (t) => {
  const fake = await fakeKube();
  const auth = { authorization: `Bearer ${fake.token}`, 'content-type': 'application/json' };
  const body = JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's1' }, data: { A: 'eA==' } });
  t.is((await fetch(`${fake.url}/api/v1/namespaces/x/secrets`, { method: 'POST', headers: auth, body })).status, 201);
  const again = await fetch(`${fake.url}/api/v1/namespaces/x/secrets`, { method: 'POST', headers: auth, body });
  t.like(await again.json(), { kind: 'Status', status: 'Failure', reason: 'AlreadyExists', code: 409, message: 'secrets "s1" already exists' });
  const missing = await fetch(`${fake.url}/api/v1/namespaces/x/pods/nope`, { headers: auth });
  t.like(await missing.json(), { kind: 'Status', reason: 'NotFound', code: 404, message: 'pods "nope" not found' });
  const anon = await fetch(`${fake.url}/api/v1/namespaces/x/secrets/s1`);
  t.like(await anon.json(), { kind: 'Status', reason: 'Unauthorized', code: 401 });
});

test('bad options fail the boot naming the option', async (t) => {
  const fake = await fakeKube();
  const boot = (options: Record<string, unknown>) =>
    createAdapter('runtime', { use: 'kubernetes', options }, deps).then(
      () => 'booted',
      (e: Error) => e.message,
    );
  const good = optionsFor(fake);
  t.is(await boot(good), 'booted');
  t.regex(await boot({ ...good, image: undefined }), /adapters\.runtime\.options\.image: "image" is required/);
  t.regex(await boot({ ...good, workspace: undefined }), /adapters\.runtime\.options\.workspace: "workspace" is required/);
  t.regex(
    await boot({ ...good, workspace: { persistent_volume_claim: 'a', host_path: '/b' } }),
    /adapters\.runtime\.options\.workspace: "workspace" contains a conflict between exclusive peers \[persistent_volume_claim, host_path\]/,
  );
  t.regex(
    await boot({ ...good, insecure_skip_tls_verify: false }),
    /adapters\.runtime\.options\.server: an http:\/\/ server needs insecure_skip_tls_verify: true/,
  );
  t.regex(
    await boot({ ...good, kubeconfig: '/etc/kubeconfig' }),
    /adapters\.runtime\.options\.?: .*contains a conflict between optional exclusive peers \[kubeconfig, in_cluster, server\]/,
  );
  t.regex(
    await boot({ ...good, kubeconfig: undefined, server: undefined, token: undefined, insecure_skip_tls_verify: undefined, kubeconfig_: 1 }),
    /adapters\.runtime\.options\.kubeconfig_: "kubeconfig_" is not allowed/,
  );
  t.regex(
    await boot({ image: 'x', workspace: { host_path: '/w', mount_path: '/w' }, kubeconfig: '/nonexistent/kubeconfig' }),
    /adapters\.runtime\.options\.kubeconfig: cannot read \/nonexistent\/kubeconfig/,
  );
  // The user is worker.run_as_uid/run_as_gid now, the same for every runtime: the old options are unknown here.
  t.is(
    await boot({ ...good, run_as_uid: 1000, run_as_gid: 1000 }),
    'adapters.runtime.options.run_as_uid: "run_as_uid" is not allowed; adapters.runtime.options.run_as_gid: "run_as_gid" is not allowed',
  );
  t.regex(await boot({ ...good, default_resource_class: 'job.c7' }), /adapters\.runtime\.options\.default_resource_class: 'job\.c7' is not a resource class/);
  t.regex(
    await boot({ ...good, resource_classes: { 'job.c1': { requests: { cpu: 'lots' } } } }),
    /adapters\.runtime\.options\.resource_classes\.job\.c1\.requests\.cpu/,
  );
  t.regex(await boot({ ...good, workspace: { host_path: root } }), /workspace\.mount_path: required when the server config gives no worker\.workspace_root/);
});

test('a kubeconfig file (and one of its contexts) is a source of the address and credentials', async (t) => {
  const fake = await fakeKube();
  const file = path.join(root, 'kubeconfig');
  await writeFile(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: other',
      'clusters:',
      `  - name: fake\n    cluster: { server: "${fake.url}", insecure-skip-tls-verify: true }`,
      '  - name: nowhere\n    cluster: { server: "http://127.0.0.1:1", insecure-skip-tls-verify: true }',
      `users:\n  - name: svc\n    user: { token: ${fake.token} }`,
      'contexts:\n  - name: fake-ctx\n    context: { cluster: fake, user: svc }\n  - name: other\n    context: { cluster: nowhere, user: svc }',
    ].join('\n'),
  );
  const { server: _s, token: _t, insecure_skip_tls_verify: _i, ...rest } = optionsFor(fake);
  const runtime = await runtimeFor(fake, {
    ...rest,
    server: undefined,
    token: undefined,
    insecure_skip_tls_verify: undefined,
    kubeconfig: file,
    context: 'fake-ctx',
  });
  const proc = await runtime.start(await sh('echo via-kubeconfig'));
  t.deepEqual(text(await collect(proc.lines())), ['via-kubeconfig']);
  t.is((await proc.exited).exitCode, 0);
  const boot = (options: Record<string, unknown>) =>
    createAdapter('runtime', { use: 'kubernetes', options }, deps).then(
      () => 'booted',
      (e: Error) => e.message,
    );
  t.is(await boot({ ...rest, kubeconfig: file, context: 'nope' }), `adapters.runtime.options.context: no context 'nope' in ${file}`);
  delete process.env.KUBERNETES_SERVICE_HOST;
  t.is(
    await boot({ ...rest, in_cluster: true }),
    'adapters.runtime.options.in_cluster: KUBERNETES_SERVICE_HOST is not set (the worker is not running in a pod)',
  );
});
