/**
 * `npm run test:docker`: the tests that need a Docker engine. With no engine answering (DOCKER_HOST,
 * else /var/run/docker.sock) it says so plainly and exits 0; otherwise it builds the worker image if
 * the engine does not have it (never pulling anything) and runs test/docker/*.docker.ts with ava.
 * Extra arguments go to ava (e.g. a single file).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { engineAddress, engineMessage, statusOf } from '../../adapters/runtime/docker/engine.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const IMAGE = process.env.SVC_DOCKER_TEST_IMAGE ?? 'svc-worker:local';

const address = engineAddress(null, null);
const docker = new Docker(address.options);
const answered = await Promise.race([
  docker.ping().then(() => null, (err: unknown) => engineMessage(err)),
  new Promise<string>((resolve) => setTimeout(() => resolve('no answer in 5 s'), 5000).unref()),
]);
if (answered !== null) {
  console.log(`docker: no engine at ${address.text}; docker runtime tests skipped (${answered})`);
  process.exit(0);
}

try {
  await docker.getImage(IMAGE).inspect();
  console.log(`docker: engine at ${address.text}, image ${IMAGE} present`);
} catch (err) {
  if (statusOf(err) !== 404) throw err;
  console.log(`docker: engine at ${address.text}; building ${IMAGE} (no pulls)`);
  const build = spawnSync(path.join(ROOT, 'adapters/runtime/docker/image/build.sh'), [IMAGE], { stdio: 'inherit' });
  if (build.status !== 0) {
    console.error(`docker: building ${IMAGE} failed (exit ${build.status}); docker runtime tests not run`);
    process.exit(1);
  }
}

const ava = spawnSync(path.join(ROOT, 'node_modules/.bin/ava'), ['--config', 'test/docker/ava.config.mjs', ...process.argv.slice(2)], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, SVC_DOCKER_TEST_IMAGE: IMAGE },
});
process.exit(ava.status ?? 1);
