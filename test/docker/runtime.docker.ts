/**
 * The docker runtime against a real Docker engine (npm run test:docker): containers of the locally
 * built worker image, output streamed as it is written, exits, kills, timeouts, limits, the user
 * (spec.user, else the server's own), and no container left behind afterwards (checked through the
 * Engine API). Run as root, like the server in a container deployment: the tests hand workspaces to
 * uid 1000 themselves, as the worker does before it calls the runtime (plugins/worker/run-as.ts).
 */
import test from 'ava';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import runtimeAdapter from '../../adapters/runtime/docker/index.ts';
import type { AdapterDeps } from '../../core/adapters.ts';
import type { OutputLine, ProcessSpec, Runtime } from '../../core/ports/runtime.ts';
import { containersLabelled, docker, IMAGE } from './helpers.ts';

const deps = { logger: pino({ level: 'silent' }), databaseUrl: '', config: {}, db: {} } as unknown as AdapterDeps;

async function makeRuntime(options: Record<string, unknown> = {}): Promise<Runtime> {
  const { value, error } = runtimeAdapter.options.validate({ image: IMAGE, network: 'none', ...options });
  if (error) throw error;
  return runtimeAdapter.create(value, deps);
}

let root = '';
test.before(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'svc-docker-runtime-'));
});
test.after.always(async () => {
  await rm(root, { recursive: true, force: true });
});

let dirs = 0;
async function workdir(): Promise<string> {
  const dir = path.join(root, `w${++dirs}`);
  await mkdir(dir);
  return dir;
}

const sh = (cwd: string, script: string, extra: Partial<ProcessSpec> = {}): ProcessSpec => ({ command: 'sh', args: ['-c', script], env: {}, cwd, ...extra });

async function collect(lines: AsyncIterable<OutputLine>): Promise<OutputLine[]> {
  const out: OutputLine[] = [];
  for await (const line of lines) out.push(line);
  return out;
}

const text = (lines: OutputLine[], stream: OutputLine['stream']) => lines.filter((l) => l.stream === stream).map((l) => l.line);

const SVC = { uid: 1000, gid: 1000 };
const asServer = () => `${process.getuid!()}:${process.getgid!()}`;

/** What the worker does before the start when the server is root and run_as_uid is set (there: plugins/worker/run-as.ts handOver). */
async function handTo(dir: string, user: { uid: number; gid: number }): Promise<void> {
  await chown(dir, user.uid, user.gid);
}

const noContainerFor = async (cwd: string) => (await containersLabelled(`svc.workspace=${cwd}`)).length === 0;

test('stdout and stderr arrive as lines, with the exit code; the container is removed before exited resolves', async (t) => {
  const cwd = await workdir();
  const runtime = await makeRuntime();
  const proc = await runtime.start(sh(cwd, 'echo out1; echo err1 >&2; printf "out2\\r\\nno-newline"; exit 3'));
  const lines = await collect(proc.lines());
  t.deepEqual(text(lines, 'stdout'), ['out1', 'out2', 'no-newline']);
  t.deepEqual(text(lines, 'stderr'), ['err1']);
  t.deepEqual(await proc.exited, { exitCode: 3, signal: null, timedOut: false });
  t.true(await noContainerFor(cwd));
});

test('lines arrive while the container is still running', async (t) => {
  const cwd = await workdir();
  const runtime = await makeRuntime();
  const proc = await runtime.start(sh(cwd, 'echo first; sleep 3; echo second'));
  let exited = false;
  void proc.exited.then(() => (exited = true));
  const iterator = proc.lines()[Symbol.asyncIterator]();
  const first = await iterator.next();
  t.deepEqual(first.value, { stream: 'stdout', line: 'first' });
  t.false(exited, 'the first line came before the end');
  const running = await containersLabelled(`svc.workspace=${cwd}`);
  t.is(running.length, 1);
  t.is(running[0].State, 'running');
  t.deepEqual(await iterator.next(), { done: false, value: { stream: 'stdout', line: 'second' } });
  t.true((await iterator.next()).done);
  t.is((await proc.exited).exitCode, 0);
  t.true(await noContainerFor(cwd));
});

test("the environment is spec.env over the image's; the process runs as spec.user (uid 1000) in the workspace handed to it", async (t) => {
  const cwd = await workdir();
  await handTo(cwd, SVC);
  const runtime = await makeRuntime();
  process.env.SVC_TEST_PARENT_ONLY = 'leak';
  const proc = await runtime.start(
    sh(
      cwd,
      'echo "$FOO|${SVC_TEST_PARENT_ONLY:-unset}|$HOME|$PATH"; env | grep -E "^SVC_(WORKSPACE_ROOT|CACHE_ROOT|HOME|RUN_AS_UID)=" | sort; id -u; id -g; pwd; touch made-inside && echo wrote',
      { env: { FOO: 'bar baz=1' }, user: SVC },
    ),
  );
  const out = text(await collect(proc.lines()), 'stdout');
  t.deepEqual(out, [
    'bar baz=1|unset|/home/node|/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin',
    // The spec's fixed worker-image environment.
    'SVC_CACHE_ROOT=/opt/svc/cache',
    'SVC_HOME=/home/node',
    'SVC_RUN_AS_UID=1000',
    'SVC_WORKSPACE_ROOT=/opt/svc/workspaces',
    '1000',
    '1000',
    cwd,
    'wrote',
  ]);
  t.is((await proc.exited).exitCode, 0);
  // Nothing is handed back: the host's git runs with safe.directory=*, so the worker commits it as it is.
  t.like(await stat(path.join(cwd, 'made-inside')), { uid: 1000, gid: 1000 });
  t.like(await stat(cwd), { uid: 1000, gid: 1000 });
});

test("without spec.user (run_as_uid null) the container runs as the server's own uid:gid", async (t) => {
  const cwd = await workdir();
  const runtime = await makeRuntime();
  const proc = await runtime.start(sh(cwd, 'id -u; id -g; touch made-inside && echo wrote; sleep 1'));
  const iterator = proc.lines()[Symbol.asyncIterator]();
  const out = [(await iterator.next()).value?.line, (await iterator.next()).value?.line, (await iterator.next()).value?.line];
  t.deepEqual(out, [String(process.getuid!()), String(process.getgid!()), 'wrote']);
  const [info] = await containersLabelled(`svc.workspace=${cwd}`);
  t.is((await docker.getContainer(info.Id).inspect()).Config.User, asServer());
  t.is((await proc.exited).exitCode, 0);
  t.is((await stat(path.join(cwd, 'made-inside'))).uid, process.getuid!());
  t.true(await noContainerFor(cwd));
});

test('files are written into the workspace before the start, owned by spec.user; paths escaping it are refused before any container exists', async (t) => {
  const cwd = await workdir();
  await handTo(cwd, SVC);
  const runtime = await makeRuntime();
  const files = { 'conf/nested/a.json': '{"a":1}\n', 'b.txt': 'hello\n' };
  // The container user rewrites them and creates next to them: they and the folders made for them are its own.
  const proc = await runtime.start(
    sh(cwd, 'cat conf/nested/a.json; cat b.txt; echo again >> b.txt && touch conf/nested/c && echo rewrote', { files, user: SVC }),
  );
  t.deepEqual(text(await collect(proc.lines()), 'stdout'), ['{"a":1}', 'hello', 'rewrote']);
  t.is((await proc.exited).exitCode, 0);
  t.is(await readFile(path.join(cwd, 'b.txt'), 'utf8'), 'hello\nagain\n');
  for (const name of ['conf', 'conf/nested', 'conf/nested/a.json', 'b.txt']) t.like(await stat(path.join(cwd, name)), { uid: 1000, gid: 1000 }, name);

  // Without spec.user they are the server's, like the process that reads them.
  const own = await workdir();
  const plain = await runtime.start(sh(own, 'cat b.txt', { files: { 'b.txt': 'mine\n' } }));
  t.deepEqual(text(await collect(plain.lines()), 'stdout'), ['mine']);
  await plain.exited;
  t.is((await stat(path.join(own, 'b.txt'))).uid, process.getuid!());

  const outside = await workdir();
  await symlink(outside, path.join(cwd, 'link'));
  for (const name of ['../evil.txt', 'link/evil.txt']) {
    await t.throwsAsync(runtime.start(sh(cwd, 'true', { files: { [name]: 'x' } })), { message: /escapes the working directory/ }, name);
  }
  t.false(existsSync(path.join(outside, 'evil.txt')));
  t.true(await noContainerFor(cwd));
});

test('the resource class sets the memory and CPU limits', async (t) => {
  const cwd = await workdir();
  const runtime = await makeRuntime({ resource_classes: { 'test.small': { cpus: 0.5, memory: '64m', pids: 64 } } });
  const proc = await runtime.start(
    sh(cwd, 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max; echo ready; sleep 2', {
      resourceClass: 'test.small',
    }),
  );
  const iterator = proc.lines()[Symbol.asyncIterator]();
  t.is((await iterator.next()).value?.line, String(64 * 1024 * 1024), 'the cgroup limit seen inside');
  await iterator.next();
  const [info] = await containersLabelled(`svc.workspace=${cwd}`);
  const inspected = await docker.getContainer(info.Id).inspect();
  t.like(inspected.HostConfig, { Memory: 64 * 1024 * 1024, NanoCpus: 500_000_000, PidsLimit: 64 });
  t.is(inspected.Config.User, asServer());
  t.is((await proc.exited).exitCode, 0);

  const defaults = await runtime.start(sh(cwd, 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max'));
  t.deepEqual(text(await collect(defaults.lines()), 'stdout'), [String(2 * 1024 ** 3)], 'job.c1 when the job names no class');
  await defaults.exited;

  await t.throwsAsync(runtime.start(sh(cwd, 'true', { resourceClass: 'job.huge' })), {
    message: "runtime docker: unknown resource class 'job.huge' (known: job.c1, job.c2, test.small; add it to adapters.runtime.options.resource_classes)",
  });
  t.true(await noContainerFor(cwd));
});

test('a timeout stops the container, escalating to SIGKILL when SIGTERM is ignored', async (t) => {
  const cwd = await workdir();
  const runtime = await makeRuntime({ kill_grace_ms: 300 });
  // Long enough for the shell to set its trap even on a slow engine (vfs storage).
  const proc = await runtime.start(sh(cwd, 'trap "" TERM; echo waiting; sleep 60 & wait', { timeoutMs: 2500 }));
  const started = Date.now();
  const lines = collect(proc.lines());
  const exit = await proc.exited;
  t.deepEqual(exit, { exitCode: null, signal: 'SIGKILL', timedOut: true });
  t.true(Date.now() - started < 30_000, 'ended long before the 60 s sleep (removal included; slow on vfs storage)');
  t.deepEqual(text(await lines, 'stdout'), ['waiting']);
  t.true(await noContainerFor(cwd));
});

test('kill() ends the container with SIGTERM and resolves once it is removed', async (t) => {
  const cwd = await workdir();
  const runtime = await makeRuntime({ kill_grace_ms: 20_000 });
  const proc = await runtime.start(sh(cwd, 'echo started; sleep 60'));
  const iterator = proc.lines()[Symbol.asyncIterator]();
  t.is((await iterator.next()).value?.line, 'started');
  const started = Date.now();
  await proc.kill();
  t.true(Date.now() - started < 15_000, 'SIGTERM was enough: no wait for the grace period');
  t.deepEqual(await proc.exited, { exitCode: null, signal: 'SIGTERM', timedOut: false });
  t.true((await iterator.next()).done);
  t.true(await noContainerFor(cwd));
});

test("a command missing from the image exits 127 with the init's message; the container is removed", async (t) => {
  const cwd = await workdir();
  const runtime = await makeRuntime();
  const proc = await runtime.start({ command: 'svc-no-such-command', args: [], env: {}, cwd });
  const lines = await collect(proc.lines());
  t.is((await proc.exited).exitCode, 127);
  t.regex(text(lines, 'stderr').join('\n'), /exec svc-no-such-command failed: No such file or directory/);
  t.true(await noContainerFor(cwd));
});

test('a start the engine refuses rejects start() and leaves no container', async (t) => {
  const cwd = await workdir();
  const runtime = await makeRuntime({ init: false });
  await t.throwsAsync(runtime.start({ command: 'svc-no-such-command', args: [], env: {}, cwd }), { message: /^runtime docker: .*svc-no-such-command/ });
  t.true(await noContainerFor(cwd));
});

test('lines longer than 1 MiB are split without losing bytes, across many stream frames', async (t) => {
  const cwd = await workdir();
  const runtime = await makeRuntime();
  const proc = await runtime.start(sh(cwd, "head -c 3000000 /dev/zero | tr '\\0' a; echo; echo tail; echo to-stderr >&2"));
  const lines = await collect(proc.lines());
  const out = text(lines, 'stdout');
  t.is(out.length, 4);
  t.true(out.slice(0, 3).every((l) => l.length <= 1024 * 1024 && /^a+$/.test(l)));
  t.is(out.slice(0, 3).join('').length, 3_000_000);
  t.is(out[3], 'tail');
  t.deepEqual(text(lines, 'stderr'), ['to-stderr']);
});

test('a slow reader holds the container back instead of losing output', async (t) => {
  const cwd = await workdir();
  const runtime = await makeRuntime();
  // ~24 MiB of numbered lines: three times what the line queue buffers before it pauses the stream.
  const proc = await runtime.start(sh(cwd, 'i=0; while [ $i -lt 120000 ]; do printf "%07d %0192d\\n" $i 0; i=$((i+1)); done'));
  let count = 0;
  let inOrder = true;
  for await (const l of proc.lines()) {
    if (count % 20_000 === 0) await new Promise((r) => setTimeout(r, 200));
    if (Number(l.line.slice(0, 7)) !== count) inOrder = false;
    count += 1;
  }
  t.is(count, 120_000);
  t.true(inOrder);
  t.is((await proc.exited).exitCode, 0);
});

test('a missing image fails the boot naming it', async (t) => {
  await t.throwsAsync(makeRuntime({ image: 'svc-no-such-image:nope' }), {
    message:
      /^runtime docker: image 'svc-no-such-image:nope' is not on the engine at .*; images are never pulled: build it with adapters\/runtime\/docker\/image\/build\.sh/,
  });
});

test("the runtime hands nothing over: spec.user cannot write a 0700 workspace it was not given; the server's user can", async (t) => {
  const cwd = await workdir();
  await chmod(cwd, 0o700);
  const runtime = await makeRuntime();
  const refused = await runtime.start(sh(cwd, 'echo ok > inside.txt', { user: SVC }));
  t.regex(text(await collect(refused.lines()), 'stderr').join('\n'), /Permission denied/);
  t.is((await refused.exited).exitCode, 1);
  const after = await stat(cwd);
  t.is(after.uid, process.getuid!());
  t.is(after.mode & 0o777, 0o700);
  t.false(existsSync(path.join(cwd, 'inside.txt')));

  const proc = await runtime.start(sh(cwd, 'echo ok > inside.txt && cat inside.txt'));
  t.deepEqual(text(await collect(proc.lines()), 'stdout'), ['ok']);
  t.is((await proc.exited).exitCode, 0);
  t.true(await noContainerFor(cwd));
});
