import test from 'ava';
import type { ProjectDirectory } from '../../core/ports/directory.ts';
import type { ManifestReader } from '../../core/ports/manifest.ts';
import { loadManifest } from '../../domain/manifest/parse.ts';
import { DeployTargets } from '../../plugins/environments/targets.ts';
import type { EnvironmentRow } from '../../plugins/environments/repository.ts';
import { example } from './helpers.ts';

test('the example manifests are valid', (t) => {
  for (const name of ['staging.yaml', 'push-to-staging.yaml', 'pull-request-previews.yaml']) {
    const result = loadManifest(example(name));
    t.true(result.ok, `${name}: ${JSON.stringify(!result.ok && result.errors)}`);
  }
});

test('service run settings are checked with their paths', (t) => {
  const result = loadManifest(`
services:
  web:
    command: 7
    ports: [8080, "18080:80", "x", "127.0.0.1:18081:80", "localhost:18082:80", "1:2:3:4"]
    deploy_strategy: rolling
    environment: { A: { nested: true } }
    healthcheck: { interval_seconds: 0, every: 1 }
`);
  t.false(result.ok);
  const problems = !result.ok ? result.errors.map((e) => `${e.path}: ${e.message}`) : [];
  t.true(problems.includes('services.web.command: command must be a string or a list of strings'), problems.join('\n'));
  const port = 'a port is a number, "host:container" or "address:host:container"';
  t.deepEqual(
    problems.filter((p) => p.startsWith('services.web.ports')),
    [`services.web.ports[2]: ${port}`, `services.web.ports[4]: ${port}`, `services.web.ports[5]: ${port}`],
  );
  t.true(problems.includes("services.web.deploy_strategy: deploy_strategy must be 'replace' or 'start-first'"), problems.join('\n'));
  t.true(problems.includes('services.web.environment.A: an environment value must be a string'));
  t.true(problems.some((p) => p.startsWith('services.web.healthcheck.command: healthcheck.command is required')));
  t.true(problems.includes('services.web.healthcheck.interval_seconds: interval_seconds must be a positive integer'));
  t.true(problems.some((p) => p.startsWith('services.web.healthcheck.every')));
});

test("the deployer is handed each port's host address and host port, and the manifest's deploy strategy (null: the deployer chooses)", async (t) => {
  const loaded = loadManifest(`
services:
  web:
    ports: [8080, "18080:80", "127.0.0.1:18081:81"]
    deploy_strategy: start-first
  worker: {}
`);
  if (!loaded.ok) return t.fail(JSON.stringify(loaded.errors));
  const projects = { byId: async (id: string) => ({ id, org_id: 'org_1', slug: 'shop' }) } as unknown as ProjectDirectory;
  const manifests = { current: async () => ({ parsed: loaded.manifest }), byHash: async () => null } as unknown as ManifestReader;
  const env = { id: 'env_1', project_id: 'prj_1', name: 'staging', namespace: null } as EnvironmentRow;
  const target = await new DeployTargets(projects, manifests, () => null).of(env, null);
  t.deepEqual(target.services.web.ports, [
    { container: 8080, host: null, host_ip: null },
    { container: 80, host: 18080, host_ip: null },
    { container: 81, host: 18081, host_ip: '127.0.0.1' },
  ]);
  t.is(target.services.web.deploy_strategy, 'start-first');
  t.is(target.services.worker.deploy_strategy, null);
});
