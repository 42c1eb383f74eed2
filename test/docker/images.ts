/**
 * The images the engine-backed tests run, made here without pulling anything: the worker image
 * (adapters/runtime/docker/image/build.sh) and the worker image with the real CLIs
 * (examples/docker/worker-clis-image.sh), and for the packaging examples the Node base, the
 * dependencies and the server image (examples/docker/) and PostgreSQL (examples/compose/).
 * Bases are built when missing (the dependencies also when package-lock.json changed, the CLI image
 * when the pinned versions or its base changed); the server image is built every time, from
 * BuildKit's cache when the sources did not change.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import { statusOf } from '../../adapters/docker/engine.ts';
import { CLI_NAMES, cacheRoot, cliBin } from '../clis/support/clis.ts';

export const WORKER_IMAGE = process.env.SVC_DOCKER_TEST_IMAGE ?? 'svc-worker:local';
export const CLIS_IMAGE = process.env.SVC_DOCKER_TEST_CLIS_IMAGE ?? 'svc-worker-clis:local';
export const NODE_IMAGE = 'svc-node:local';
export const DEPS_IMAGE = 'svc-deps:local';
export const SERVER_IMAGE = process.env.SVC_DOCKER_TEST_SERVER_IMAGE ?? 'svc:local';
export const POSTGRES_IMAGE = 'svc-postgres:local';

/** Debian's CLI: a newer one earlier on PATH refuses BuildKit builds without buildx (docs/packaging.md). */
export const DOCKER_CLI = process.env.SVC_DOCKER_CLI ?? '/usr/bin/docker';

async function labelsOf(docker: Docker, image: string): Promise<Record<string, string> | null> {
  try {
    return (await docker.getImage(image).inspect()).Config?.Labels ?? {};
  } catch (err) {
    if (statusOf(err) === 404) return null;
    throw err;
  }
}

function run(root: string, what: string, command: string, args: string[], env: Record<string, string> = {}): void {
  const started = Date.now();
  console.log(`docker: building ${what}`);
  const res = spawnSync(command, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ...env } });
  if (res.status !== 0) throw new Error(`building ${what} failed (exit ${res.status})`);
  console.log(`docker: ${what} built in ${Math.round((Date.now() - started) / 1000)} s`);
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/**
 * The worker image with the CLIs, (re)built when its labels do not match the pinned versions
 * (test/clis/versions.json) and the worker image's id. The script copies the CLIs from test:clis's
 * cache, which CI has filled by then; they are installed there first when missing.
 */
async function ensureClisImage(docker: Docker, root: string): Promise<void> {
  const labels = await labelsOf(docker, CLIS_IMAGE);
  const base = (await docker.getImage(WORKER_IMAGE).inspect()).Id;
  if (labels?.['svc.clis.pins'] === sha256(path.join(root, 'test/clis/versions.json')) && labels['svc.clis.base'] === base) return;
  for (const name of CLI_NAMES) cliBin(name);
  run(root, CLIS_IMAGE, path.join(root, 'examples/docker/worker-clis-image.sh'), [CLIS_IMAGE], { SVC_WORKER_IMAGE: WORKER_IMAGE, SVC_CLI_CACHE: cacheRoot() });
}

export async function ensureImages(docker: Docker, root: string): Promise<void> {
  if (!(await labelsOf(docker, WORKER_IMAGE))) run(root, WORKER_IMAGE, path.join(root, 'adapters/runtime/docker/image/build.sh'), [WORKER_IMAGE]);
  await ensureClisImage(docker, root);
  if (!(await labelsOf(docker, NODE_IMAGE))) run(root, NODE_IMAGE, path.join(root, 'examples/docker/node-image.sh'), [NODE_IMAGE]);
  const lock = sha256(path.join(root, 'package-lock.json'));
  if ((await labelsOf(docker, DEPS_IMAGE))?.['svc.package-lock'] !== lock)
    run(root, DEPS_IMAGE, path.join(root, 'examples/docker/deps-image.sh'), [DEPS_IMAGE]);
  if (!(await labelsOf(docker, POSTGRES_IMAGE))) run(root, POSTGRES_IMAGE, path.join(root, 'examples/compose/postgres-image.sh'), [POSTGRES_IMAGE]);
  run(
    root,
    SERVER_IMAGE,
    DOCKER_CLI,
    [
      'build',
      '--quiet',
      '--network=none',
      '--build-arg',
      `NODE_IMAGE=${NODE_IMAGE}`,
      '--build-arg',
      `DEPS_IMAGE=${DEPS_IMAGE}`,
      '-f',
      'examples/docker/Dockerfile',
      '-t',
      SERVER_IMAGE,
      '.',
    ],
    { DOCKER_BUILDKIT: '1' },
  );
}

/** The base the build tests' Dockerfiles start FROM: busybox as /bin/sh and a few applets (:2 added sleep). */
export const BUILD_BASE_IMAGE = 'svc-test-base:2';

/** Imports BUILD_BASE_IMAGE from a busybox root filesystem when the engine lacks it (nothing pulled). */
export function ensureBuildBaseImage(): void {
  try {
    execFileSync(DOCKER_CLI, ['image', 'inspect', BUILD_BASE_IMAGE], { stdio: 'ignore' });
    return;
  } catch {
    /* make it */
  }
  const work = mkdtempSync(path.join(tmpdir(), 'svc-build-base-'));
  try {
    const root = path.join(work, 'rootfs');
    mkdirSync(path.join(root, 'bin'), { recursive: true });
    mkdirSync(path.join(root, 'tmp'));
    copyFileSync('/bin/busybox', path.join(root, 'bin/busybox'));
    for (const applet of ['sh', 'ls', 'cat', 'false', 'true', 'echo', 'sleep']) symlinkSync('busybox', path.join(root, 'bin', applet));
    execFileSync('tar', ['-C', root, '-cf', path.join(work, 'rootfs.tar'), '.']);
    execFileSync(DOCKER_CLI, ['import', path.join(work, 'rootfs.tar'), BUILD_BASE_IMAGE], { stdio: ['ignore', 'ignore', 'inherit'] });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
