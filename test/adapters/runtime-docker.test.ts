/**
 * The docker runtime's parts that need no Docker engine: options, the engine address, errors when
 * nothing answers, the stream demultiplexer. Containers are tested against a real engine by
 * `npm run test:docker` (test/docker), which says plainly when no engine exists.
 */
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { createAdapter, type AdapterDeps } from '../../core/adapters.ts';
import { demultiplex } from '../../adapters/docker/demux.ts';
import { engineAddress } from '../../adapters/docker/engine.ts';
import { memoryBytes } from '../../adapters/runtime/docker/limits.ts';
import { startTestServer } from '../support/server.ts';

const deps = { logger: pino({ level: 'silent' }), databaseUrl: '', config: {}, db: {} } as unknown as AdapterDeps;
const docker = (options: Record<string, unknown>) => createAdapter('runtime', { use: 'docker', options }, deps);

let dir = '';
test.before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'svc-docker-opts-'));
});
test.after.always(() => rm(dir, { recursive: true, force: true }));

test('options are validated, each error naming its option', async (t) => {
  await t.throwsAsync(docker({}), { message: 'adapters.runtime.options.image: "image" is required' });
  await t.throwsAsync(docker({ image: 'x', kill_grace_ms: -1 }), {
    message: 'adapters.runtime.options.kill_grace_ms: "kill_grace_ms" must be greater than or equal to 0',
  });
  // The user is worker.run_as_uid's (ProcessSpec.user) for every runtime: the docker runtime has no option of its own for it.
  await t.throwsAsync(docker({ image: 'x', user: '1000:1000', chown_workspace: false }), {
    message: 'adapters.runtime.options.user: "user" is not allowed; adapters.runtime.options.chown_workspace: "chown_workspace" is not allowed',
  });
  await t.throwsAsync(docker({ image: 'x', extra_binds: ['relative:/x'] }), {
    message: /^adapters\.runtime\.options\.extra_binds\.0: .*\/host\/path:\/container\/path\[:ro\|rw\] pattern/,
  });
  await t.throwsAsync(docker({ image: 'x', resource_classes: { big: { cpus: 0, memory: 'lots' } } }), {
    message:
      /^adapters\.runtime\.options\.resource_classes\.big\.cpus: .*must be a positive number; adapters\.runtime\.options\.resource_classes\.big\.memory: /,
  });
  await t.throwsAsync(docker({ image: 'x', socket_path: '/a.sock', host: 'tcp://h:2375' }), {
    message: 'adapters.runtime.options.host: "host" cannot be set together with "socket_path"',
  });
  await t.throwsAsync(docker({ image: 'x', host: 'ftp://h' }), { message: /^adapters\.runtime\.options\.host: .*DOCKER_HOST address/ });
  await t.throwsAsync(docker({ image: 'x', socket_path: path.join(dir, 'none.sock'), default_resource_class: 'job.c9' }), {
    message: "adapters.runtime.options.default_resource_class: 'job.c9' is not a resource class (job.c1, job.c2)",
  });
});

test('a wrong option fails the boot of a worker, naming it', async (t) => {
  const err = await t.throwsAsync(
    startTestServer({
      overrides: { roles: ['api', 'orchestrator', 'worker'], adapters: { runtime: { use: 'docker', options: { image: 'svc-worker:local', network: 7 } } } },
    }),
  );
  t.is(err?.message, 'adapters.runtime.options.network: "network" must be a string');
});

test('a socket with no engine behind it fails clearly, naming the address', async (t) => {
  const missing = path.join(dir, 'missing.sock');
  await t.throwsAsync(docker({ image: 'x', socket_path: missing }), {
    message: `runtime docker: no Docker engine answers at unix://${missing} (connect ENOENT ${missing})`,
  });
  await t.throwsAsync(docker({ image: 'x', host: 'tcp://127.0.0.1:1' }), {
    message: /^runtime docker: no Docker engine answers at tcp:\/\/127\.0\.0\.1:1 \(connect ECONNREFUSED 127\.0\.0\.1:1\)$/,
  });

  // Something listens but never answers: the ping gives up after ping_timeout_ms.
  const silent = path.join(dir, 'silent.sock');
  const server = net.createServer(() => {});
  await new Promise<void>((resolve) => server.listen(silent, resolve));
  try {
    const started = Date.now();
    await t.throwsAsync(docker({ image: 'x', socket_path: silent, ping_timeout_ms: 300 }), {
      message: `runtime docker: no Docker engine answers at unix://${silent} (no answer in 300 ms)`,
    });
    t.true(Date.now() - started < 5000);
  } finally {
    server.close();
  }
});

test('the engine address: socket_path, else host, else DOCKER_HOST, else the default socket', (t) => {
  t.deepEqual(engineAddress('/run/d.sock', null, {}), { options: { socketPath: '/run/d.sock' }, text: 'unix:///run/d.sock' });
  t.deepEqual(engineAddress(null, 'unix:///x/d.sock', {}), { options: { socketPath: '/x/d.sock' }, text: 'unix:///x/d.sock' });
  t.deepEqual(engineAddress(null, 'tcp://10.0.0.5:2375', {}), { options: { host: '10.0.0.5', port: '2375', protocol: 'http' }, text: 'tcp://10.0.0.5:2375' });
  t.deepEqual(engineAddress(null, 'https://docker.example', {}), {
    options: { host: 'docker.example', port: 2376, protocol: 'https' },
    text: 'https://docker.example',
  });
  t.deepEqual(engineAddress(null, null, { DOCKER_HOST: 'tcp://h:1' }), { options: undefined, text: 'tcp://h:1' });
  t.deepEqual(engineAddress(null, null, {}), { options: { socketPath: '/var/run/docker.sock' }, text: 'unix:///var/run/docker.sock' });
});

test('memory sizes', (t) => {
  t.is(memoryBytes('64m'), 64 * 1024 ** 2);
  t.is(memoryBytes('1.5g'), 1.5 * 1024 ** 3);
  t.is(memoryBytes('512MiB'), 512 * 1024 ** 2);
  t.is(memoryBytes(10_000_000), 10_000_000);
});

const frame = (type: number, payload: string) => {
  const body = Buffer.from(payload);
  const header = Buffer.alloc(8);
  header[0] = type;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
};

test('the attach stream is split into stdout and stderr, frames cut anywhere across chunks', async (t) => {
  const wire = Buffer.concat([frame(1, 'out one\nout '), frame(2, 'err\n'), frame(1, 'two\n'), frame(3, 'engine says no\n')]);
  const source = new PassThrough();
  const out = new PassThrough();
  const err = new PassThrough();
  demultiplex(source, out, err);
  const read = (s: PassThrough) =>
    new Promise<string>((resolve) => {
      let text = '';
      s.on('data', (c: Buffer) => (text += c.toString()));
      s.on('end', () => resolve(text));
    });
  const [o, e] = [read(out), read(err)];
  for (let i = 0; i < wire.length; i += 3) source.write(wire.subarray(i, i + 3));
  source.end();
  t.is(await o, 'out one\nout two\n');
  t.is(await e, 'err\nengine says no\n');
});

test('a full target pauses the attach stream until it drains', async (t) => {
  const source = new PassThrough();
  const out = new PassThrough({ highWaterMark: 16 });
  const err = new PassThrough();
  demultiplex(source, out, err);
  source.write(frame(1, 'x'.repeat(64)));
  await new Promise((r) => setImmediate(r));
  t.true(source.isPaused(), 'paused while nobody reads stdout');
  out.resume();
  await new Promise((r) => setImmediate(r));
  t.false(source.isPaused());
});
