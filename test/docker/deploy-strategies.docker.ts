/**
 * The Docker deployer's strategies on the real engine, through the environments API: a service on a
 * published host port (a user-defined bridge network: the engine runs with `--bridge=none`, and its
 * userland proxy publishes ports of such a network) and one on host networking are replaced in
 * place, deploy after deploy and on rollback; a broken release puts the old container back; a
 * container that exits at once fails the deploy with its exit code and last output (secrets masked;
 * its stdout and stderr lines are apart in time, as `docker logs` orders the two streams by time).
 */
import net from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { FakeReleases } from '../fixtures/deployer.ts';
import { ReleasesToken } from '../../core/ports/releases.ts';
import { envWorldWith, settled, sha } from '../environments/helpers.ts';
import type { World } from '../jobs/claim-helpers.ts';
import { containersLabelled, docker } from './helpers.ts';
import { webImage } from './web-images.ts';

const TAG = `svc-deploy-strategies-${process.pid}`;
const NETWORK = `svc-deploy-strategies-${process.pid}`;
const TOKEN = 'tok-9c1e55ab30f24d7e';
const HTTPD = ['busybox', 'httpd', '-f', '-p', '8080', '-h', '/www'];
const CRASH = ['/bin/sh', '-c', 'echo starting; busybox sleep 0.3; echo "crash: bind: Address already in use (token $API_TOKEN)" >&2; exit 3'];
const digests: Record<string, string> = {};
const worlds: World[] = [];
const releasesOf = new Map<World, FakeReleases>();
let published: World;
let hosted: World;
let publishedPort = 0;
let hostPort = 0;

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const healthcheck = (port: number) =>
  `{ command: 'busybox wget -q -O /dev/null http://127.0.0.1:${port}/', interval_seconds: 1, timeout_seconds: 2, retries: 3 }`;

/** A world whose deployer runs containers on `network`, with `yaml` in project A, the API_TOKEN secret and releases v1 (one), v2 (two), v3 (broken), v4 (crash). */
async function world(name: string, yaml: string, network: string): Promise<World> {
  const releases = new FakeReleases();
  const w = await envWorldWith(name, yaml, {
    overrides: { adapters: { deployer: { use: 'docker', options: { network, health_timeout_ms: 30_000, stop_timeout_seconds: 1 } } } },
    configure: (c) => c.registerInstance(ReleasesToken, releases),
  });
  worlds.push(w);
  releasesOf.set(w, releases);
  const secret = await w.owner.api.post(`/projects/${w.projectA}/secrets`, { name: 'API_TOKEN', value: TOKEN });
  if (secret.statusCode !== 201) throw new Error(`secret: ${secret.statusCode} ${JSON.stringify(secret.body)}`);
  for (const [i, image] of ['v1', 'v2', 'broken', 'crash'].entries())
    releases.add(w.projectA, {
      id: `rel_${i + 1}`,
      tag: `v${i + 1}`,
      git_sha: sha(String(i + 1)),
      manifest_hash: null,
      image_digests: { web: digests[image] },
    });
  return w;
}

test.before(async () => {
  digests.v1 = webImage(`${TAG}:v1`, 'one', HTTPD);
  digests.v2 = webImage(`${TAG}:v2`, 'two', HTTPD);
  digests.broken = webImage(`${TAG}:broken`, null, HTTPD);
  digests.crash = webImage(`${TAG}:crash`, 'never', CRASH);
  await docker.createNetwork({ Name: NETWORK, Driver: 'bridge' });
  publishedPort = await freePort();
  hostPort = await freePort();
  published = await world(
    'deploypub',
    `services:\n  web:\n    ports: ['127.0.0.1:${publishedPort}:8080']\n    environment: { API_TOKEN: '\${secret.API_TOKEN}' }\n    healthcheck: ${healthcheck(8080)}\nenvironments:\n  staging: { type: persistent }\n`,
    NETWORK,
  );
  hosted = await world(
    'deployhost',
    `services:\n  web:\n    command: [busybox, httpd, -f, -p, '127.0.0.1:${hostPort}', -h, /www]\n    healthcheck: ${healthcheck(hostPort)}\nenvironments:\n  staging: { type: persistent }\n`,
    'host',
  );
});

test.after.always(async () => {
  for (const w of worlds) {
    for (const project of [w.projectA, w.projectA2])
      for (const c of await containersLabelled(`svc.project=${project}`)) await docker.getContainer(c.Id).remove({ force: true });
    await w.ctx.srv.stop();
  }
  await docker
    .getNetwork(NETWORK)
    .remove()
    .catch(() => undefined);
  for (const name of ['v1', 'v2', 'broken', 'crash'])
    await docker
      .getImage(`${TAG}:${name}`)
      .remove({ force: true })
      .catch(() => undefined);
});

const base = (w: World, project = w.projectA) => `/projects/${project}/environments/staging`;
const deploy = async (w: World, body: Record<string, unknown>, path = '/deploy', project = w.projectA) => {
  const res = await w.owner.api.post(`${base(w, project)}${path}`, body);
  if (res.statusCode !== 202) throw new Error(`deploy: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return settled(w, 'staging', res.body.id, project);
};
const logOf = async (w: World, deployId: string, project = w.projectA): Promise<string[]> =>
  (await w.owner.api.get(`${base(w, project)}/deploys/${deployId}/logs?limit=1000`)).body.data.map((l: any) => l.line);
/** The page served on the host's port. */
const page = async (port: number) => (await fetch(`http://127.0.0.1:${port}/`)).text();
const containersOf = (w: World) => containersLabelled(`svc.project=${w.projectA}`);

/** Deploys v1, v2, a rollback to v1 and v3 (broken) on a fixed port: each replaces the old container, the broken one puts it back. */
async function replacedInPlace(t: ExecutionContext, w: World, port: number, reason: string) {
  const one = await deploy(w, { release_tag: 'v1' });
  t.like(one, { status: 'succeeded' }, String(one.error_message));
  t.true(
    (await logOf(w, one.id)).includes(
      `web: deploy strategy replace (the old container stops before the new one starts, and starts again if the new one fails): ${reason}`,
    ),
  );
  t.is(await page(port), 'one');
  const [first] = await containersOf(w);

  const two = await deploy(w, { release_tag: 'v2' });
  t.like(two, { status: 'succeeded' }, String(two.error_message));
  const log = await logOf(w, two.id);
  t.true(
    log.some((l) => /^web: previous container svc-\S+ stopped \(kept until the new one is healthy\)$/.test(l)),
    log.join('\n'),
  );
  t.is(await page(port), 'two');
  const [second, ...more] = await containersOf(w);
  t.deepEqual(more, [], 'the old container is gone');
  t.not(second.Id, first.Id);

  t.like(await deploy(w, {}, '/rollback'), { status: 'succeeded', release: { tag: 'v1' } });
  t.is(await page(port), 'one');
  const [third, ...others] = await containersOf(w);
  t.deepEqual(others, [], 'the old container is gone after the rollback');

  const broken = await deploy(w, { release_tag: 'v3' });
  t.is(broken.status, 'failed');
  t.regex(broken.error_message, /^not healthy: web \(health check failing.*\) \(release v1 keeps serving\)$/);
  const failed = await logOf(w, broken.id);
  t.true(
    failed.some((l) => /^web: previous container svc-\S+ started again$/.test(l)),
    failed.join('\n'),
  );
  t.true(failed.includes('the previous containers serve again'), failed.join('\n'));
  t.is(await page(port), 'one', 'the old container serves again');
  t.deepEqual(
    (await containersOf(w)).map((c) => [c.Id, c.State]),
    [[third.Id, 'running']],
  );
  t.like((await w.owner.api.get(base(w))).body, { current_release: { tag: 'v1' } });
}

test.serial('a published host port: deploys and a rollback replace the container in place; a broken release puts the old one back', async (t) => {
  await replacedInPlace(t, published, publishedPort, `it publishes host port 127.0.0.1:${publishedPort}, which one container holds at a time`);
});

test.serial('a container that exits at once fails the deploy with its exit code and last output, secrets masked; the old one serves again', async (t) => {
  const crash = await deploy(published, { release_tag: 'v4' });
  t.is(crash.status, 'failed');
  t.is(
    crash.error_message,
    'not healthy: web (exited with code 3; last output: starting | crash: bind: Address already in use (token ***)) (release v1 keeps serving)',
  );
  const log = await logOf(published, crash.id);
  t.true(log.includes('web: not healthy: exited with code 3'), log.join('\n'));
  const output = log.indexOf('web: its last 2 line(s) of output:');
  t.deepEqual(log.slice(output, output + 3), ['web: its last 2 line(s) of output:', 'web | starting', 'web | crash: bind: Address already in use (token ***)']);
  t.false(JSON.stringify([crash, log]).includes(TOKEN));
  t.deepEqual(crash.services, [{ service: 'web', health: 'degraded', detail: 'exited with code 3' }]);
  t.is(await page(publishedPort), 'one');
  t.is((await containersOf(published)).length, 1);
});

test.serial('host networking: deploys and a rollback replace the container in place; a broken release puts the old one back', async (t) => {
  await replacedInPlace(t, hosted, hostPort, "the deployer's network is host, so the old and the new container would share the host's ports");
});

test.serial('start-first chosen in the manifest on a port taken: the deploy fails naming the exit code and the bind error', async (t) => {
  const yaml = `services:\n  web:\n    command: [busybox, httpd, -f, -p, '127.0.0.1:${hostPort}', -h, /www]\n    deploy_strategy: start-first\n    healthcheck: ${healthcheck(hostPort)}\nenvironments:\n  staging: { type: persistent }\n`;
  t.is((await hosted.owner.api.post(`/projects/${hosted.projectA2}/manifest`, { yaml })).statusCode, 200);
  releasesOf.get(hosted)!.add(hosted.projectA2, { id: 'rel_a2', tag: 'a2', git_sha: sha('9'), manifest_hash: null, image_digests: { web: digests.v2 } });
  const taken = await deploy(hosted, { release_tag: 'a2' }, '/deploy', hosted.projectA2);
  t.is(taken.status, 'failed');
  t.regex(taken.error_message, /^not healthy: web \(exited with code 1; last output: .*bind: Address already in use\) \(nothing was serving before\)$/);
  const log = await logOf(hosted, taken.id, hosted.projectA2);
  t.true(
    log.includes(
      'web: deploy strategy start-first (the new container starts beside the old one, which is removed once the new one is healthy): services.web.deploy_strategy in the manifest',
    ),
    log.join('\n'),
  );
  t.is(await page(hostPort), 'one', "project A's container keeps its port");
});
