import test from 'ava';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import runtimeAdapter from '../../adapters/runtime/local/index.ts';
import type { AdapterDeps } from '../../core/adapters.ts';
import type { OutputLine, ProcessSpec, Runtime } from '../../core/ports/runtime.ts';

const deps = { logger: pino({ level: 'silent' }), databaseUrl: '', config: {}, db: {} } as unknown as AdapterDeps;

async function makeRuntime(options: Record<string, unknown> = {}): Promise<Runtime> {
  const { value, error } = runtimeAdapter.options.validate(options);
  if (error) throw error;
  return runtimeAdapter.create(value, deps);
}

let root = '';
test.before(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'svc-runtime-test-'));
  await chmod(root, 0o755); // reachable by the run_as_uid test's user
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

const sh = (script: string, extra: Partial<ProcessSpec> = {}): ProcessSpec => ({ command: 'sh', args: ['-c', script], env: {}, cwd: root, ...extra });

async function collect(lines: AsyncIterable<OutputLine>): Promise<OutputLine[]> {
  const out: OutputLine[] = [];
  for await (const line of lines) out.push(line);
  return out;
}

const text = (lines: OutputLine[], stream: OutputLine['stream']) => lines.filter((l) => l.stream === stream).map((l) => l.line);

/** Gone, or a zombie waiting for a reaper: either way no longer running. */
function processGone(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return true;
  try {
    return readFileSync(stat, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
  } catch {
    return true;
  }
}

async function eventually(check: () => boolean, timeoutMs = 10_000): Promise<boolean> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    if (check()) return true;
  }
  return check();
}

test('stdout and stderr arrive as lines, with the exit code', async (t) => {
  const runtime = await makeRuntime();
  const proc = await runtime.start(sh('echo out1; echo err1 >&2; printf "out2\\r\\nno-newline"; exit 3'));
  const lines = await collect(proc.lines());
  t.deepEqual(text(lines, 'stdout'), ['out1', 'out2', 'no-newline']);
  t.deepEqual(text(lines, 'stderr'), ['err1']);
  t.deepEqual(await proc.exited, { exitCode: 3, signal: null, timedOut: false });
});

test('the environment is exactly spec.env plus PATH and HOME', async (t) => {
  process.env.SVC_TEST_PARENT_ONLY = 'leak';
  const runtime = await makeRuntime();
  const proc = await runtime.start(
    sh('echo "$FOO|${SVC_TEST_PARENT_ONLY:-unset}|$HOME"; test -n "$PATH" && echo has-path', { env: { FOO: 'bar', HOME: '/custom' } }),
  );
  t.deepEqual(text(await collect(proc.lines()), 'stdout'), ['bar|unset|/custom', 'has-path']);
  t.is((await proc.exited).exitCode, 0);
});

test('files are written under cwd before the process starts', async (t) => {
  const cwd = await workdir();
  const runtime = await makeRuntime();
  const proc = await runtime.start(sh('cat conf/nested/a.json; cat b.txt', { cwd, files: { 'conf/nested/a.json': '{"a":1}\n', 'b.txt': 'hello\n' } }));
  t.deepEqual(text(await collect(proc.lines()), 'stdout'), ['{"a":1}', 'hello']);
  t.is(await readFile(path.join(cwd, 'b.txt'), 'utf8'), 'hello\n');
});

test('file paths escaping cwd are refused', async (t) => {
  const cwd = await workdir();
  const outside = await workdir();
  await symlink(outside, path.join(cwd, 'link'));
  const runtime = await makeRuntime();
  for (const name of ['../evil.txt', 'a/../../evil.txt', path.join(outside, 'abs.txt'), 'link/evil.txt', 'link/sub/evil.txt']) {
    await t.throwsAsync(runtime.start(sh('true', { cwd, files: { [name]: 'x' } })), { message: /escapes the working directory/ }, name);
  }
  t.false(existsSync(path.join(outside, 'evil.txt')));
  t.false(existsSync(path.join(outside, 'sub')), 'no directory created outside');
  t.false(existsSync(path.join(root, 'evil.txt')));
});

test('a missing command rejects start()', async (t) => {
  const runtime = await makeRuntime();
  await t.throwsAsync(runtime.start({ command: 'svc-no-such-command', args: [], env: {}, cwd: root }), { code: 'ENOENT' });
});

test('timeout kills the whole tree, escalating to SIGKILL when SIGTERM is ignored', async (t) => {
  const runtime = await makeRuntime({ kill_grace_ms: 300 });
  // The ignored SIGTERM is inherited by the background sleep (a grandchild of ours).
  const proc = await runtime.start(sh('trap "" TERM; sleep 60 & echo $!; wait', { timeoutMs: 500 }));
  const lines = collect(proc.lines());
  const exit = await proc.exited;
  t.true(exit.timedOut);
  t.is(exit.exitCode, null);
  const grandchild = Number(text(await lines, 'stdout')[0]);
  t.true(grandchild > 0);
  t.true(await eventually(() => processGone(grandchild)), `grandchild ${grandchild} still running`);
});

test('a background process left behind by the leader is ended with it', async (t) => {
  const runtime = await makeRuntime({ kill_grace_ms: 1000 });
  const proc = await runtime.start(sh('sleep 60 & echo $!'));
  const lines = await collect(proc.lines());
  const exit = await proc.exited;
  t.deepEqual(exit, { exitCode: 0, signal: null, timedOut: false });
  const grandchild = Number(text(lines, 'stdout')[0]);
  t.true(await eventually(() => processGone(grandchild)), `grandchild ${grandchild} still running`);
});

test('kill() ends the process tree and resolves after exit', async (t) => {
  const runtime = await makeRuntime();
  const proc = await runtime.start(sh('sleep 60 & echo $!; sleep 60'));
  const iterator = proc.lines()[Symbol.asyncIterator]();
  const first = await iterator.next();
  const grandchild = Number((first.value as OutputLine).line);
  await proc.kill();
  const exit = await proc.exited;
  t.is(exit.signal, 'SIGTERM');
  t.false(exit.timedOut);
  t.true(await eventually(() => processGone(grandchild)));
  t.true((await iterator.next()).done);
});

test('lines longer than 1 MiB are split without losing bytes', async (t) => {
  const runtime = await makeRuntime();
  const proc = await runtime.start(sh("head -c 3000000 /dev/zero | tr '\\0' a; echo; echo tail"));
  const lines = text(await collect(proc.lines()), 'stdout');
  t.is(lines.length, 4);
  t.true(lines.slice(0, 3).every((l) => l.length <= 1024 * 1024 && /^a+$/.test(l)));
  t.is(lines.slice(0, 3).join('').length, 3_000_000);
  t.is(lines[3], 'tail');
});

test('lines() can be consumed only once', async (t) => {
  const runtime = await makeRuntime();
  const proc = await runtime.start(sh('echo x'));
  await collect(proc.lines());
  await t.throwsAsync(collect(proc.lines()), { message: /only once/ });
  await proc.exited;
});

test("options: defaults, and nonsense refused (the user to run as is the spec's, not an option)", (t) => {
  const { value } = runtimeAdapter.options.validate({});
  t.deepEqual(value, { kill_grace_ms: 5000 });
  t.truthy(runtimeAdapter.options.validate({ kill_grace_ms: -1 }).error);
  t.truthy(runtimeAdapter.options.validate({ run_as_uid: 1000 }).error);
});

test('spec.user runs the process as that user when the server is root, with a home of its own', async (t) => {
  if (process.getuid?.() !== 0) return t.pass('not root');
  const cwd = await workdir();
  await chown(cwd, 1000, 1000);
  const runtime = await makeRuntime();
  const proc = await runtime.start(
    sh('id -u; id -g; stat -c %u f.txt; echo "$HOME"; touch sub/dir/new "$HOME/x"', {
      cwd,
      files: { 'f.txt': 'x', 'sub/dir/g.txt': 'y' },
      user: { uid: 1000, gid: 1000 },
    }),
  );
  t.deepEqual(text(await collect(proc.lines()), 'stdout'), ['1000', '1000', '1000', path.join(cwd, '.svc', 'home')]);
  t.is((await proc.exited).exitCode, 0); // could write into the directory created for it, and its home
});

test('output nobody reads does not block the process or grow without bound', async (t) => {
  const runtime = await makeRuntime();
  const proc = await runtime.start(sh("head -c 20000000 /dev/zero | tr '\\0' a | fold -w 1000"));
  t.is((await proc.exited).exitCode, 0);
  const lines = await collect(proc.lines());
  t.regex(lines[0].line, /^\[svc: \d+ earlier output lines dropped/);
  const kept = lines.slice(1).reduce((n, l) => n + l.line.length, 0);
  t.true(kept > 0 && kept <= 8 * 1024 * 1024);
});

test('a slow reader holds the process back instead of losing output', async (t) => {
  const runtime = await makeRuntime();
  const proc = await runtime.start(sh("head -c 20000000 /dev/zero | tr '\\0' a | fold -w 1000; echo; echo end"));
  const iterator = proc.lines()[Symbol.asyncIterator]();
  await iterator.next();
  await new Promise((r) => setTimeout(r, 1500)); // the process fills the buffer and waits
  let count = 1;
  let last = '';
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
    count += 1;
    last = next.value.line;
  }
  t.is(count, 20_001); // 20000 lines of a, then end
  t.is(last, 'end');
  t.is((await proc.exited).exitCode, 0);
});

test('a reader that stops early does not leave the process blocked', async (t) => {
  const runtime = await makeRuntime();
  const proc = await runtime.start(sh("head -c 20000000 /dev/zero | tr '\\0' a | fold -w 1000"));
  for await (const _line of proc.lines()) {
    await new Promise((r) => setTimeout(r, 300)); // long enough for the buffer to fill and pause the pipes
    break;
  }
  t.is((await proc.exited).exitCode, 0);
});
