/**
 * `npm run test:docker`: the tests that need a Docker engine. With no engine answering (DOCKER_HOST,
 * else /var/run/docker.sock) it says so plainly and exits 0, or 1 with SVC_DOCKER_REQUIRED=1 (CI);
 * otherwise it makes the images the tests run (test/docker/images.ts; never pulling anything) and
 * runs test/docker/*.docker.ts with ava.
 * Extra arguments go to ava (e.g. a single file).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { engineAddress, engineMessage } from '../../adapters/docker/engine.ts';
import { CLIS_IMAGE, ensureImages, WORKER_IMAGE } from './images.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const address = engineAddress(null, null);
const docker = new Docker(address.options);
const answered = await Promise.race([
  docker.ping().then(
    () => null,
    (err: unknown) => engineMessage(err),
  ),
  new Promise<string>((resolve) => setTimeout(() => resolve('no answer in 5 s'), 5000).unref()),
]);
if (answered !== null) {
  if (process.env.SVC_DOCKER_REQUIRED === '1') {
    console.error(`docker: no engine at ${address.text} (${answered}), and SVC_DOCKER_REQUIRED=1: failing`);
    process.exit(1);
  }
  console.log(`docker: no engine at ${address.text}; docker runtime tests skipped (${answered})`);
  process.exit(0);
}

console.log(`docker: engine at ${address.text}`);
try {
  await ensureImages(docker, ROOT);
} catch (err) {
  console.error(`docker: ${(err as Error).message}; the engine-backed tests were not run`);
  process.exit(1);
}

const ava = spawnSync(path.join(ROOT, 'node_modules/.bin/ava'), ['--config', 'test/docker/ava.config.mjs', ...process.argv.slice(2)], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, SVC_DOCKER_TEST_IMAGE: WORKER_IMAGE, SVC_DOCKER_TEST_CLIS_IMAGE: CLIS_IMAGE },
});
process.exit(ava.status ?? 1);
