import test from 'ava';
import path from 'node:path';
import { createBuilders, AdapterError, type AdapterDeps } from '../../core/adapters.ts';
import { builderContract, type Builder } from '../../core/sdk.ts';
import { createLogger } from '../../core/logger.ts';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { settled, twoServiceRepo } from '../builds/helpers.ts';

/**
 * A third-party builder added through config alone (examples/builder-plugin, issue 31 item 6): it
 * passes svc's builder contract kit, a bad provider fails the boot naming itself, and a build
 * through the API runs on it end to end.
 */
const EXAMPLE = path.resolve('examples/builder-plugin');
const COMMAND = path.join(EXAMPLE, 'bin/fake-build');
const deps = { logger: createLogger('silent') } as unknown as AdapterDeps;

const builderFrom = async (options: Record<string, unknown>): Promise<Builder> =>
  (await createBuilders({ command: { use: EXAMPLE, command: COMMAND, ...options } }, deps)).get('command')!;

const service = (name: string) => ({ service: name, context: name, dockerfile: 'Dockerfile', image_ref: `registry.example/acme/${name}:abc` });
const repo = twoServiceRepo();

test('the example builder passes the builder contract kit', async (t) => {
  const builder = await builderFrom({});
  const checks = builderContract(builder, {
    repoUrl: repo.url,
    gitSha: repo.sha,
    services: [service('api'), service('web')],
    failing: { services: [service('broken')] },
  });
  t.true(checks.length >= 6);
  for (const check of checks) await t.notThrowsAsync(async () => check.run(), check.name);
});

test('the contract kit catches a builder that breaks it', async (t) => {
  const honest = await builderFrom({});
  const liar: Builder = {
    name: 'liar',
    available: () => honest.available(),
    // Answers whatever it was asked, without a digest, and ignores cancellation.
    build: async (request) =>
      request.services.map((s) => ({ service_name: s.service, image_ref: s.image_ref, digest: 'latest', platforms: [], size_bytes: 1 })),
  };
  const failed: string[] = [];
  for (const check of builderContract(liar, { repoUrl: repo.url, gitSha: repo.sha, services: [service('api')] })) {
    await Promise.resolve(check.run()).catch(() => failed.push(check.name));
  }
  t.true(failed.some((n) => /sha256 digest/.test(n)));
  t.true(failed.some((n) => /through request.log/.test(n)));
  t.true(failed.some((n) => /cancelled build rejects/.test(n)));
});

test('a bad provider fails the boot naming its config key and itself', async (t) => {
  const boot = (builders: Record<string, Record<string, unknown>>) => createBuilders(builders, deps);
  await t.throwsAsync(boot({ command: { use: './examples/nowhere' } }), {
    instanceOf: AdapterError,
    message: /^builds\.builders\.command\.use: '\.\/examples\/nowhere' is neither a built-in builder adapter/,
  });
  await t.throwsAsync(boot({ acme: { use: path.resolve('examples/harness-plugin') } }), {
    instanceOf: AdapterError,
    message: /^builds\.builders\.acme\.use: '.*harness-plugin' does not export a default defineAdapter/,
  });
  await t.throwsAsync(boot({ other: { use: EXAMPLE, command: COMMAND } }), {
    instanceOf: AdapterError,
    message: /^builds\.builders\.other\.use: '.*builder-plugin' builds as 'command', but it is configured as 'other'/,
  });
  await t.throwsAsync(boot({ command: { use: EXAMPLE } }), { instanceOf: AdapterError, message: /^builds\.builders\.command\.command: "command" is required/ });
  await t.throwsAsync(boot({ podman: {} }), {
    instanceOf: AdapterError,
    message: /^builds\.builders\.podman: not a built-in builder \(buildkit, buildx, kaniko\), and no use: names a package/,
  });
});

test.serial('a build through the API runs on the plugin builder: digests from its command, logs from its lines', async (t) => {
  let s: TestServer | undefined;
  t.teardown(() => s?.stop());
  s = await startTestServer({
    overrides: {
      roles: ['api', 'worker'],
      builds: { backend: 'command', poll_ms: 50, log_flush_ms: 0, builders: { command: { use: EXAMPLE, command: COMMAND } } },
    },
  });
  const admin = as(s.server, (await bootstrapAdmin(s.server)).token);
  const org = await admin.post('/orgs', { name: 'Plugin Builds' });
  const project = await admin.post('/projects', { org_id: org.body.id, name: 'Plugged', slug: 'plugged', repo_url: repo.url });
  t.is(project.statusCode, 201, JSON.stringify(project.body));
  const hash = (await admin.post(`/projects/${project.body.id}/manifest/validate`, { ref: repo.sha })).body.manifest_hash;
  const created = await admin.post(`/projects/${project.body.id}/builds`, { git_sha: repo.sha, manifest_hash: hash, services: ['api', 'web'] });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  t.is(created.body.latest_run.backend, 'command');
  const build = await settled(admin, created.body.id);
  t.is(build.status, 'completed', JSON.stringify(build));
  const artifacts = (await admin.get(`/builds/${build.id}/artifacts`)).body.data as { service_name: string; digest: string }[];
  t.deepEqual(artifacts.map((a) => a.service_name).sort(), ['api', 'web']);
  for (const a of artifacts) t.regex(a.digest, /^sha256:[0-9a-f]{64}$/);
  const logs = await admin.get(build.latest_run.logs_ref);
  t.regex(JSON.stringify(logs.body), /fake-build: building api/);
});
