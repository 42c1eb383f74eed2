import test from 'ava';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import YAML from 'yaml';
import runtimeAdapter from '../../adapters/runtime/kubernetes/index.ts';
import type { AdapterDeps } from '../../core/adapters.ts';
import { configPathOf, loadConfig } from '../../core/config/load.ts';
import type { Config } from '../../core/config/schema.ts';
import { FakeKube, type RecordedRequest } from '../fixtures/fake-kube/server.ts';
import { startTestServer } from '../support/server.ts';
import { ROOT } from '../support/serve-process.ts';

/**
 * examples/cluster/, rendered offline as `kubectl kustomize` would (namespace, the secret generator
 * over secrets.env.example, the image override: the only kustomization features it uses), then held
 * against svc itself: environment names are config variables and the config they make is valid,
 * ports and probes match what the processes serve, and the Role allows every call the kubernetes
 * runtime makes.
 */
const DIR = path.join(ROOT, 'examples/cluster');
type Doc = Record<string, any>;

function render(dir: string): Doc[] {
  const k = YAML.parse(readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8'));
  const supported = ['apiVersion', 'kind', 'namespace', 'resources', 'secretGenerator', 'generatorOptions', 'images'];
  const unsupported = Object.keys(k).filter((key) => !supported.includes(key));
  if (unsupported.length) throw new Error(`this test does not render ${unsupported.join(', ')}: extend it`);
  const docs: Doc[] = k.resources.flatMap((file: string) => YAML.parseAllDocuments(readFileSync(path.join(dir, file), 'utf8')).map((d) => d.toJS()));
  for (const gen of k.secretGenerator ?? []) {
    const stringData: Record<string, string> = {};
    for (const file of gen.envs) {
      const source = existsSync(path.join(dir, file)) ? file : `${file}.example`;
      for (const line of readFileSync(path.join(dir, source), 'utf8').split('\n')) {
        const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line.trim());
        if (m) stringData[m[1]] = m[2];
      }
    }
    docs.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: gen.name }, type: 'Opaque', stringData });
  }
  for (const doc of docs) if (doc.kind !== 'Namespace') doc.metadata.namespace = k.namespace;
  for (const doc of docs.filter((d) => d.kind === 'Deployment')) {
    for (const c of doc.spec.template.spec.containers) {
      const image = (k.images ?? []).find((i: Doc) => c.image.split(':')[0] === i.name);
      if (image) c.image = `${image.newName ?? image.name}:${image.newTag}`;
    }
  }
  return docs;
}

const docs = render(DIR);
const of = (kind: string) => docs.filter((d) => d.kind === kind);
const named = (kind: string, name: string) => of(kind).find((d) => d.metadata.name === name);
const deployments = of('Deployment');
const scratch = mkdtempSync(path.join(tmpdir(), 'svc-cluster-test-'));
test.after.always(() => rmSync(scratch, { recursive: true, force: true }));

/** The environment of a deployment's container as svc sees it: its env, its Secret's keys, SVC_CONFIG at the ConfigMap's svc.yaml copied here. */
function environmentOf(deployment: Doc): Record<string, string> {
  const c = deployment.spec.template.spec.containers[0];
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) Object.assign(env, named('Secret', from.secretRef.name)!.stringData);
  for (const e of c.env ?? []) env[e.name] = e.value;
  const mount = c.volumeMounts.find((m: Doc) => env.SVC_CONFIG?.startsWith(`${m.mountPath}/`));
  const volume = deployment.spec.template.spec.volumes.find((v: Doc) => v.name === mount.name);
  const file = path.join(scratch, `${deployment.metadata.name}-${path.basename(env.SVC_CONFIG)}`);
  writeFileSync(file, named('ConfigMap', volume.configMap.name)!.data[path.basename(env.SVC_CONFIG)]);
  return { ...env, SVC_CONFIG: file };
}
const configOf = (deployment: Doc): Config => loadConfig({ env: environmentOf(deployment), cwd: scratch });
const podsOf = (selector: Record<string, string>) =>
  deployments.filter((d) => Object.entries(selector).every(([k, v]) => d.spec.template.metadata.labels[k] === v));

test('kubectl-free rendering: an api Deployment with replicas, an orchestrator, workers per worker type, config, secret, RBAC, PDBs', (t) => {
  t.true(named('Deployment', 'svc-api')!.spec.replicas > 1);
  t.truthy(named('Deployment', 'svc-orchestrator'));
  t.true(deployments.filter((d) => d.metadata.name.startsWith('svc-worker-')).length >= 2);
  for (const kind of ['Service', 'ConfigMap', 'Secret', 'ServiceAccount', 'Role', 'RoleBinding', 'PodDisruptionBudget', 'PersistentVolumeClaim'])
    t.true(of(kind).length > 0, kind);
  for (const d of deployments) {
    t.is(d.spec.template.spec.containers[0].image, 'registry.example.com/svc:0.1.0', 'the images override applies');
    t.deepEqual(d.spec.selector.matchLabels, d.spec.template.metadata.labels, `${d.metadata.name} selects its own pods`);
  }
});

test('every environment variable the containers get is a config variable, and the config they make is valid', (t) => {
  for (const d of deployments) {
    const env = environmentOf(d);
    for (const name of Object.keys(env)) if (name !== 'SVC_CONFIG') t.truthy(configPathOf(name), `${d.metadata.name}: ${name} sets no config key`);
    const config = configOf(d);
    t.deepEqual(config.roles, env.SVC_ROLES.split(','), d.metadata.name);
    t.is(config.env, 'production');
    if (config.roles.includes('worker')) {
      const { error } = runtimeAdapter.options.validate(config.adapters.runtime.options);
      t.is(error?.message, undefined, `${d.metadata.name}: the kubernetes runtime takes its options`);
    }
  }
});

test('ports: containers listen on server.port, Services reach them, and the URLs in the config name those Services', (t) => {
  for (const d of deployments) {
    const [http] = d.spec.template.spec.containers[0].ports;
    t.is(http.containerPort, configOf(d).server.port, d.metadata.name);
    t.is(configOf(d).server.host, '0.0.0.0', `${d.metadata.name} listens beyond its loopback`);
  }
  for (const s of of('Service')) {
    const pods = podsOf(s.spec.selector);
    t.true(pods.length > 0, `${s.metadata.name} selects pods`);
    for (const p of s.spec.ports)
      for (const pod of pods)
        t.truthy(
          pod.spec.template.spec.containers[0].ports.find((cp: Doc) => cp.name === p.targetPort || cp.containerPort === p.targetPort),
          `${s.metadata.name}:${p.port}`,
        );
  }
  const urls = [
    ...deployments.flatMap((d) => Object.values(configOf(d).worker.urls)),
    ...deployments.map((d) => configOf(d).worker.api_url).filter(Boolean),
  ] as string[];
  t.true(urls.length > 0);
  for (const url of urls) {
    const u = new URL(url);
    const service = named('Service', u.hostname);
    t.truthy(service, `${url} names a Service`);
    t.truthy(
      service?.spec.ports.find((p: Doc) => p.port === Number(u.port || 80)),
      `${url}: the Service has that port`,
    );
  }
  const orchestrator = configOf(named('Deployment', 'svc-orchestrator')!);
  for (const d of deployments.filter((x) => x.metadata.name.startsWith('svc-worker-'))) {
    t.truthy(
      Object.values(orchestrator.worker.urls).find((u) => podsOf(named('Service', new URL(u).hostname)!.spec.selector).includes(d)),
      `the orchestrator dispatches to ${d.metadata.name}`,
    );
  }
});

test('PodDisruptionBudgets select the pods of a Deployment with more than one replica', (t) => {
  t.truthy(of('PodDisruptionBudget').find((p) => podsOf(p.spec.selector.matchLabels).includes(named('Deployment', 'svc-api')!)));
  for (const p of of('PodDisruptionBudget')) {
    const pods = podsOf(p.spec.selector.matchLabels);
    t.is(pods.length, 1, p.metadata.name);
    t.true(pods[0].spec.replicas > (p.spec.minAvailable ?? 0), `${p.metadata.name} leaves room to evict`);
  }
});

test('probes point at routes each process answers with 200, on its named port', async (t) => {
  t.timeout(120_000);
  for (const d of deployments) {
    const c = d.spec.template.spec.containers[0];
    const roles = configOf(d).roles;
    const s = await startTestServer({ overrides: { roles } });
    try {
      for (const kind of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
        const probe = c[kind]?.httpGet;
        if (!probe) continue;
        t.truthy(
          c.ports.find((p: Doc) => p.name === probe.port || p.containerPort === probe.port),
          `${d.metadata.name} ${kind} port`,
        );
        t.is((await fetch(`${s.url}${probe.path}`)).status, 200, `${d.metadata.name} (${roles}) ${kind} ${probe.path}`);
      }
      t.truthy(c.readinessProbe && c.livenessProbe, `${d.metadata.name} has both probes`);
    } finally {
      await s.stop();
    }
  }
});

/** The RBAC verb and resource a request to the API server needs. */
function permissionOf(r: RecordedRequest): string {
  const m = /^\/api\/v1\/namespaces\/[^/]+\/([^/]+)(?:\/([^/]+))?(\/log)?$/.exec(r.path)!;
  const [, resource, name, log] = m;
  if (log) return `get ${resource}/log`;
  const verb = r.method === 'POST' ? 'create' : r.method === 'DELETE' ? 'delete' : r.query.watch === 'true' ? 'watch' : name ? 'get' : 'list';
  return `${verb} ${resource}`;
}

test("the Role allows every call the kubernetes runtime makes, for the account the worker pods run as, in the runtime's namespace", async (t) => {
  t.timeout(60_000);
  const worker = named('Deployment', 'svc-worker-default')!;
  const options = { ...configOf(worker).adapters.runtime.options };
  const workspace = path.join(scratch, 'workspaces');
  await mkdir(path.join(workspace, 'w1'), { recursive: true });
  await mkdir(path.join(workspace, 'w2'), { recursive: true });
  await chmod(scratch, 0o755);
  const fake = await new FakeKube({ claims: { [(options.workspace as Doc).persistent_volume_claim]: workspace } }).start();
  try {
    delete options.in_cluster;
    const { value, error } = runtimeAdapter.options.validate({
      ...options,
      server: fake.url,
      token: fake.token,
      insecure_skip_tls_verify: true,
      workspace: { ...(options.workspace as Doc), mount_path: workspace },
      kill_grace_seconds: 1,
    });
    if (error) throw error;
    const runtime = await runtimeAdapter.create(value, {
      logger: pino({ level: 'silent' }),
      databaseUrl: '',
      config: undefined,
      db: {},
    } as unknown as AdapterDeps);
    const user = { uid: 1000, gid: 1000 };
    const done = await runtime.start({ command: '/bin/sh', args: ['-c', 'echo hi'], env: {}, cwd: path.join(workspace, 'w1'), user });
    for await (const _line of done.lines()) {
      /* drain */
    }
    await done.exited;
    const killed = await runtime.start({ command: '/bin/sh', args: ['-c', 'sleep 30'], env: {}, cwd: path.join(workspace, 'w2'), user });
    await killed.kill();
    await killed.exited;
  } finally {
    await fake.stop();
  }
  const needed = [...new Set(fake.requests.map(permissionOf))].sort();
  t.true(needed.includes('create pods') && needed.includes('get pods/log') && needed.includes('watch pods'), needed.join(', '));
  const role = of('Role')[0];
  const allowed = new Set(role.rules.flatMap((r: Doc) => r.resources.flatMap((res: string) => r.verbs.map((v: string) => `${v} ${res}`))));
  t.deepEqual(
    needed.filter((p) => !allowed.has(p)),
    [],
    'every call is allowed',
  );
  t.is(role.metadata.namespace, options.namespace, 'the Role is in the namespace the attempt pods go to');
  const binding = of('RoleBinding').find((b) => b.roleRef.name === role.metadata.name)!;
  for (const d of deployments.filter((x) => configOf(x).roles.includes('worker'))) {
    t.truthy(
      binding.subjects.find(
        (s: Doc) => s.kind === 'ServiceAccount' && s.name === d.spec.template.spec.serviceAccountName && s.namespace === d.metadata.namespace,
      ),
      d.metadata.name,
    );
  }
  for (const d of deployments.filter((x) => !configOf(x).roles.includes('worker')))
    t.false(d.spec.template.spec.automountServiceAccountToken, `${d.metadata.name} gets no API token`);
});
