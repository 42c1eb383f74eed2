import test from 'ava';
import { readFileSync } from 'node:fs';
import { docker } from './helpers.ts';
import { SERVER_IMAGE } from './images.ts';

/** examples/docker/Dockerfile, as test/docker/run.ts built it. */

const PACKAGE = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
/** npm's lock marks a package `dev` when only dev dependencies need it (esbuild is also tsx's, so not). */
const LOCK = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8'));
const devOnly = (name: string): boolean => LOCK.packages[`node_modules/${name}`]?.dev === true;

test('the server image runs as a non-root user, listens on every interface and checks /health', async (t) => {
  const config = (await docker.getImage(SERVER_IMAGE).inspect()).Config;
  t.is(config.User, '1000:1000');
  t.true(config.Env.includes('HOST=0.0.0.0'));
  t.true(config.Env.includes('NODE_ENV=production'));
  t.deepEqual(config.Entrypoint, ['node', 'dist/cli/bin.js']);
  t.deepEqual(config.Cmd, ['serve']);
  const healthcheck = (config as unknown as { Healthcheck: { Test: string[] } }).Healthcheck.Test.join(' ');
  t.regex(healthcheck, /\/health'/);
});

/** Runs `script` with sh in a throwaway container of the image; its stdout. */
async function inImage(script: string): Promise<string> {
  const container = await docker.createContainer({
    Image: SERVER_IMAGE,
    Entrypoint: ['/bin/sh', '-c'],
    Cmd: [script],
    Tty: true,
    HostConfig: { NetworkMode: 'none' },
  });
  try {
    await container.start();
    await container.wait();
    return (await container.logs({ stdout: true, stderr: false })).toString('utf8').replace(/\r/g, '').trim(); // with a TTY: no stream frames
  } finally {
    await container.remove({ force: true });
  }
}

test('the image holds the compiled output and the production dependencies only', async (t) => {
  const listing = (await inImage('ls -1 /app; echo ---; ls -1 /app/node_modules')).split('\n');
  const [top, modules] = [listing.slice(0, listing.indexOf('---')), listing.slice(listing.indexOf('---') + 1)];
  t.deepEqual(top.sort(), ['dist', 'node_modules', 'package.json']);
  const devs = Object.keys(PACKAGE.devDependencies).filter((name) => !name.startsWith('@') && devOnly(name));
  t.true(devs.length >= 3, devs.join(' '));
  for (const dev of devs) t.false(modules.includes(dev), `${dev} (a dev dependency) is not in the image`);
  for (const dep of ['knex', 'pg', 'joi']) t.true(modules.includes(dep), dep);
});

test('started with a master key, the server becomes healthy on its own embedded database, as uid 1000, and SIGTERM stops it cleanly', async (t) => {
  t.timeout(180_000);
  const container = await docker.createContainer({
    Image: SERVER_IMAGE,
    Env: ['SVC_SECRETS_MASTER_KEY=' + 'cd'.repeat(32), 'SVC_LOG_LEVEL=warn'],
    HostConfig: { NetworkMode: 'none' },
    Labels: { 'svc.test': 'image' },
  });
  try {
    await container.start();
    let state = (await container.inspect()).State;
    for (
      const deadline = Date.now() + 150_000;
      state.Health?.Status !== 'healthy' && state.Running && Date.now() < deadline;
      await new Promise((r) => setTimeout(r, 1000))
    ) {
      state = (await container.inspect()).State;
    }
    t.is(state.Health?.Status, 'healthy', JSON.stringify(state.Health?.Log?.slice(-2)));
    const exec = await container.exec({ Cmd: ['id', '-u'], AttachStdout: true });
    const stream = await exec.start({});
    let out = '';
    for await (const chunk of stream as AsyncIterable<Buffer>) out += chunk.subarray(8).toString('utf8');
    t.is(out.trim(), '1000');
    await container.stop({ t: 30 });
    t.is((await container.inspect()).State.ExitCode, 0);
  } finally {
    await container.remove({ force: true });
  }
});
