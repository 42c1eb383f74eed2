/**
 * The Docker deployer on the real engine, through the environments API: flows 3 and 4 of
 * docs/environments.md with containers. The web images are made here from busybox (`docker import`,
 * nothing pulled): v1 and v2 serve a page, `broken` serves none, so its health check fails.
 */
import { execFileSync } from 'node:child_process';
import test from 'ava';
import { FakeReleases } from '../fixtures/deployer.ts';
import { ReleasesToken } from '../../core/ports/releases.ts';
import { envWorldWith, example, settled, sha } from '../environments/helpers.ts';
import type { World } from '../jobs/claim-helpers.ts';
import { assertError } from '../orgs/helpers.ts';
import { containersLabelled, docker } from './helpers.ts';
import { DOCKER_CLI } from './images.ts';
import { webImage } from './web-images.ts';

const TAG = `svc-envs-web-${process.pid}`;
const releases = new FakeReleases();
const digests: Record<string, string> = {};
let w: World;
let projectLabel: string;

test.before(async () => {
  for (const [name, page] of [
    ['v1', 'one'],
    ['v2', 'two'],
    ['broken', null],
  ] as const)
    digests[name] = webImage(`${TAG}:${name}`, page);
  w = await envWorldWith('envdock', example('staging.yaml'), {
    overrides: { adapters: { deployer: { use: 'docker', options: { network: 'none', health_timeout_ms: 30_000, stop_timeout_seconds: 1 } } } },
    configure: (c) => c.registerInstance(ReleasesToken, releases),
  });
  projectLabel = `svc.project=${w.projectA}`;
  releases.add(w.projectA, { id: 'rel_1', tag: 'v1.1.0', git_sha: sha('a'), manifest_hash: null, image_digests: { web: digests.v1 } });
  releases.add(w.projectA, { id: 'rel_2', tag: 'v1.2.0', git_sha: sha('b'), manifest_hash: null, image_digests: { web: digests.v2 } });
  releases.add(w.projectA, { id: 'rel_3', tag: 'v1.3.0', git_sha: sha('c'), manifest_hash: null, image_digests: { web: digests.broken } });
});

test.after.always(async () => {
  for (const c of projectLabel ? await containersLabelled(projectLabel) : []) await docker.getContainer(c.Id).remove({ force: true });
  await w?.ctx.srv.stop();
  for (const name of ['v1', 'v2', 'broken'])
    await docker
      .getImage(`${TAG}:${name}`)
      .remove({ force: true })
      .catch(() => undefined);
});

const base = () => `/projects/${w.projectA}/environments/staging`;
/** The page the running container serves, fetched inside it (its network is none). */
async function page(): Promise<{ image: string; text: string }[]> {
  const running = (await containersLabelled(projectLabel)).filter((c) => c.State === 'running');
  return Promise.all(
    running.map(async (c) => ({
      image: c.ImageID,
      text: execFileSync(DOCKER_CLI, ['exec', c.Id, 'busybox', 'wget', '-q', '-O', '-', 'http://127.0.0.1:8080/'], { encoding: 'utf8' }),
    })),
  );
}

/** The lines of a deploy's log (the deployer's only, with `stream`). */
const logOf = async (deployId: string, stream?: 'system' | 'deployer'): Promise<string[]> => {
  const res = await w.owner.api.get(`${base()}/deploys/${deployId}/logs?limit=1000`);
  return res.body.data.filter((l: any) => !stream || l.stream === stream).map((l: any) => l.line);
};

const deploy = async (body: Record<string, unknown>, path = '/deploy') => {
  const res = await w.owner.api.post(`${base()}${path}`, body);
  if (res.statusCode !== 202) throw new Error(`deploy: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return settled(w, 'staging', res.body.id);
};

test.serial('flow 3 on the engine: a release runs by digest and becomes healthy; the next replaces it; a broken one leaves it serving; rollback', async (t) => {
  const one = await deploy({ release_tag: 'v1.1.0' });
  t.like(one, { status: 'succeeded', services: [{ service: 'web', health: 'healthy', detail: 'health check passing' }] });
  const reported = await logOf(one.id, 'deployer');
  t.deepEqual(reported.slice(0, 3), [
    'no container of the environment runs yet',
    `web: image ${digests.v1}`,
    "web: deploy strategy start-first (the new container starts beside the old one, which is removed once the new one is healthy): it publishes no host port and the deployer's network is not host, so both can run at once",
  ]);
  t.regex(reported[3], /^web: container svc-\S+-staging-web-\w+ \([0-9a-f]{12}\) created$/);
  t.deepEqual(reported.slice(4), ['web: container started', 'web: waiting for its health check (at most 30000 ms)', 'web: healthy (health check passing)']);
  t.false(reported.join('\n').includes('hello'), 'the environment values are never reported');
  t.deepEqual(await page(), [{ image: digests.v1, text: 'one' }]);
  t.like((await w.owner.api.get(base())).body, { health: 'healthy', current_release: { tag: 'v1.1.0' } });
  const [first] = await containersLabelled(projectLabel);
  const env = (await containersLabelled(projectLabel))[0].Labels['svc.environment'];
  t.regex(env, /^env_/);
  t.true((await docker.getContainer(first.Id).inspect()).Config.Env.includes('GREETING=hello'));

  const two = await deploy({ release_tag: 'v1.2.0' });
  t.like(two, { status: 'succeeded' });
  const replaced = await logOf(two.id, 'deployer');
  t.is(replaced[0], '1 container(s) of the environment exist now, 1 running');
  t.regex(replaced.at(-1)!, /^web: previous container svc-\S+-staging-web-\w+ removed$/);
  t.deepEqual(await page(), [{ image: digests.v2, text: 'two' }]);
  t.is((await containersLabelled(projectLabel)).length, 1, 'the old container is gone once the new one is healthy');

  const broken = await deploy({ release_tag: 'v1.3.0' });
  t.is(broken.status, 'failed');
  t.regex(broken.error_message, /not healthy: web \(health check failing.*\) \(release v1\.2\.0 keeps serving\)/);
  const failed = await logOf(broken.id);
  t.true(
    failed.some((l) => l.startsWith('web: not healthy: health check failing')),
    failed.join('\n'),
  );
  t.deepEqual(
    failed.slice(-3).map((l) => l.replace(/:.*/, '')),
    ['failed', 'the new containers were removed; the previous ones keep serving', 'deploy failed'],
  );
  t.regex(failed.at(-1)!, /^deploy failed: not healthy: web \(health check failing.*\) \(release v1\.2\.0 keeps serving\)$/);
  t.deepEqual(await page(), [{ image: digests.v2, text: 'two' }], 'the previous release keeps serving');
  t.is((await containersLabelled(projectLabel)).length, 1, 'the broken container was removed');
  t.like((await w.owner.api.get(base())).body, { health: 'healthy', current_release: { tag: 'v1.2.0' } });

  t.like(await deploy({}, '/rollback'), { status: 'succeeded', release: { tag: 'v1.1.0' } });
  t.deepEqual(await page(), [{ image: digests.v1, text: 'one' }]);
});

test.serial('flow 4 on the engine: suspend stops the containers and refuses deploys; resume starts them and health is read back', async (t) => {
  t.like((await w.owner.api.post(`${base()}/suspend`, { reason: 'night' })).body, { suspended: true });
  t.deepEqual(
    (await containersLabelled(projectLabel)).map((c) => c.State),
    ['exited'],
  );
  assertError(t, await w.owner.api.post(`${base()}/deploy`, { release_tag: 'v1.2.0' }), 409, 'environment staging is suspended: night');
  const resumed = await w.owner.api.post(`${base()}/resume`);
  t.like(resumed.body, { suspended: false, health: 'healthy' });
  t.deepEqual(await page(), [{ image: digests.v1, text: 'one' }]);

  const [c] = await containersLabelled(projectLabel);
  await docker.getContainer(c.Id).stop({ t: 1 });
  t.like((await w.owner.api.get(`${base()}/health`)).body, { health: 'degraded', health_detail: [{ service: 'web', health: 'degraded' }] });
  await docker.getContainer(c.Id).start();
});

test.serial('deleting the environment removes its containers', async (t) => {
  t.is((await w.owner.api.delete(base())).statusCode, 204);
  t.deepEqual(await containersLabelled(projectLabel), []);
});
