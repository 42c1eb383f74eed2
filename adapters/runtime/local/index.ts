/**
 * Runtime port on this machine: each attempt is a child process leading its own process group, so the
 * whole tree can be signalled at once. Processes that call setsid() leave the group and escape.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { chown, mkdir, readdir, readFile, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import Joi from 'joi';
import type { Logger } from 'pino';
import type { OutputLine, ProcessExit, ProcessSpec, RunningProcess, Runtime } from '../../../core/ports/runtime.ts';
import { defineAdapter } from '../../../core/sdk.ts';

type Options = {
  kill_grace_ms: number;
  run_as_uid: number | null;
  run_as_gid: number | null;
};

/** Longer lines are cut into pieces of this many bytes. */
const MAX_LINE_BYTES = 1024 * 1024;
/** Buffered output beyond which a reader makes the process wait (or, with no reader yet, old lines are dropped). */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

const optionsSchema = Joi.object({
  kill_grace_ms: Joi.number().integer().min(0).default(5000)
    .description('After SIGTERM to the process group, wait this long before SIGKILL.'),
  run_as_uid: Joi.number().integer().min(0).allow(null).default(null)
    .description('Run processes as this UID when the server runs as root (ignored otherwise). Worker processes are meant to run as non-root, e.g. 1000; null keeps the server\'s own user.'),
  run_as_gid: Joi.number().integer().min(0).allow(null).default(null)
    .description('Group ID to run processes as, with the same rule as run_as_uid; when null, the same number as run_as_uid.'),
});

function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/** The real path of `dir` or of its nearest existing ancestor, so symlinks are resolved before anything is created. */
async function realExisting(dir: string): Promise<string> {
  const real = await realpath(dir).catch(() => null);
  return real ?? realExisting(path.dirname(dir));
}

/** Writes spec.files under cwd, refusing any path (including through a symlink) that leads outside it. */
async function writeFiles(cwd: string, files: Record<string, string>, owner: { uid: number; gid: number } | null): Promise<void> {
  const root = await realpath(cwd);
  for (const [name, content] of Object.entries(files)) {
    const target = path.resolve(root, name);
    const parent = path.dirname(target);
    const realParent = await realExisting(parent);
    if (path.isAbsolute(name) || !isInside(root, target) || (realParent !== root && !isInside(root, realParent))) {
      throw new Error(`runtime: file path '${name}' escapes the working directory`);
    }
    const firstCreated = await mkdir(parent, { recursive: true });
    for (let dir = parent; owner && firstCreated && isInside(path.dirname(firstCreated), dir); dir = path.dirname(dir)) {
      await chown(dir, owner.uid, owner.gid);
    }
    // O_NOFOLLOW: a symlink planted at the target itself must not redirect the write.
    const { O_WRONLY, O_CREAT, O_TRUNC, O_NOFOLLOW } = fsConstants;
    await writeFile(target, content, { flag: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o644 });
    if (owner) await chown(target, owner.uid, owner.gid);
  }
}

function childEnv(specEnv: Record<string, string>): Record<string, string> {
  const inherited = Object.fromEntries(['PATH', 'HOME'].filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]!]));
  return { ...inherited, ...specEnv };
}

/** Interleaves both streams into one line queue; the queue ends when both streams have ended. */
class LineQueue {
  private readonly lines: OutputLine[] = [];
  private head = 0; // index of the oldest unread line (Array#shift is O(n))
  private bufferedBytes = 0;
  private dropped = 0;
  private openStreams = 0;
  /** Resolves the reader's current wait; calling it again after that is harmless. */
  private wake?: () => void;
  /** Only a reading reader gets backpressure; before one attaches (or after it leaves) old lines are dropped. */
  private reader: 'none' | 'reading' | 'gone' = 'none';
  private readonly streams: Readable[] = [];
  /** True while a slow reader holds the streams paused. */
  paused = false;

  add(stream: Readable, name: OutputLine['stream']): void {
    this.openStreams += 1;
    this.streams.push(stream);
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const emit = (buf: Buffer) => this.push({ stream: name, line: buf.toString('utf8').replace(/\r$/, '') });
    stream.on('data', (chunk: Buffer) => {
      let rest = chunk;
      for (let nl = rest.indexOf(10); nl !== -1; nl = rest.indexOf(10)) {
        emit(Buffer.concat([...pending, rest.subarray(0, nl)]));
        pending = [];
        pendingBytes = 0;
        rest = rest.subarray(nl + 1);
      }
      if (rest.length === 0) return;
      pending.push(rest);
      pendingBytes += rest.length;
      while (pendingBytes >= MAX_LINE_BYTES) {
        const joined = Buffer.concat(pending);
        let cut = MAX_LINE_BYTES;
        while (cut > 0 && (joined[cut] & 0xc0) === 0x80) cut -= 1; // do not split a UTF-8 character
        emit(joined.subarray(0, cut));
        pending = [joined.subarray(cut)];
        pendingBytes = joined.length - cut;
      }
    });
    stream.once('close', () => {
      if (pendingBytes > 0) emit(Buffer.concat(pending));
      this.openStreams -= 1;
      this.wake?.();
    });
  }

  private push(item: OutputLine): void {
    this.lines.push(item);
    this.bufferedBytes += item.line.length;
    if (this.bufferedBytes > MAX_BUFFERED_BYTES) {
      if (this.reader === 'reading') {
        this.paused = true;
        for (const s of this.streams) s.pause();
      } else {
        while (this.bufferedBytes > MAX_BUFFERED_BYTES / 2) {
          this.shift();
          this.dropped += 1;
        }
      }
    }
    this.wake?.();
  }

  private shift(): OutputLine {
    const item = this.lines[this.head++];
    if (this.head > 1024 && this.head * 2 > this.lines.length) {
      this.lines.splice(0, this.head);
      this.head = 0;
    }
    this.bufferedBytes -= item.line.length;
    if (this.paused && this.bufferedBytes <= MAX_BUFFERED_BYTES / 2) this.resume();
    return item;
  }

  private resume(): void {
    this.paused = false;
    for (const s of this.streams) s.resume();
  }

  async *iterate(): AsyncGenerator<OutputLine> {
    if (this.reader !== 'none') throw new Error('runtime: lines() can be consumed only once');
    this.reader = 'reading';
    try {
      if (this.dropped > 0) yield { stream: 'stderr', line: `[svc: ${this.dropped} earlier output lines dropped before anyone read them]` };
      for (;;) {
        if (this.head < this.lines.length) yield this.shift();
        else if (this.openStreams === 0) return;
        else await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      // A reader that stops early must not leave the process blocked on a full pipe.
      this.reader = 'gone';
      if (this.paused) this.resume();
    }
  }
}

/**
 * Whether any process of the group is still running. Killed orphans stay zombies until init reaps
 * them, which some inits do only every few seconds; on Linux zombies are not counted.
 */
async function groupRunning(pgid: number): Promise<boolean> {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (process.platform !== 'linux') return true;
  const pids = (await readdir('/proc').catch(() => [] as string[])).filter((name) => /^\d+$/.test(name));
  const states = await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')));
  return states.some((stat) => {
    // "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(pgrp) === pgid && state !== 'Z';
  });
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try { process.kill(-pgid, signal); } catch { /* ESRCH: the group is already gone */ }
}

class LocalProcess implements RunningProcess {
  readonly exited: Promise<ProcessExit>;
  private readonly output = new LineQueue();
  private timedOut = false;
  private killing?: Promise<void>;
  private leaderExited = false;

  constructor(private readonly child: ChildProcess, private readonly graceMs: number, timeoutMs: number | undefined) {
    this.output.add(child.stdout!, 'stdout');
    this.output.add(child.stderr!, 'stderr');
    const onTimeout = () => {
      this.timedOut = true;
      void this.kill();
    };
    const timer = timeoutMs ? setTimeout(onTimeout, timeoutMs) : undefined;
    const leaderExit = new Promise<[number | null, string | null]>((resolve) => child.once('exit', (code, signal) => resolve([code, signal])));
    this.exited = leaderExit.then(async ([code, signal]) => {
      this.leaderExited = true;
      clearTimeout(timer);
      // Whatever the leader left running in its group ends with it.
      await this.killTree();
      void this.releaseOutput();
      return { exitCode: code, signal, timedOut: this.timedOut };
    });
  }

  lines(): AsyncIterable<OutputLine> {
    return this.output.iterate();
  }

  async kill(): Promise<void> {
    await this.killTree();
    await this.exited;
  }

  private killTree(): Promise<void> {
    this.killing ??= (async () => {
      const pgid = this.child.pid!;
      const gone = async () => this.leaderExited && !(await groupRunning(pgid));
      signalGroup(pgid, 'SIGTERM');
      for (const deadline = Date.now() + this.graceMs; !(await gone()) && Date.now() < deadline;) await sleep(50);
      if (await gone()) return;
      signalGroup(pgid, 'SIGKILL');
      for (const deadline = Date.now() + 2000; !(await gone()) && Date.now() < deadline;) await sleep(50);
    })();
    return this.killing;
  }

  /**
   * The pipes normally close with the group. A process that left the group (setsid) may hold them
   * open; stop waiting for it once no reader is behind, so lines() still ends.
   */
  private async releaseOutput(): Promise<void> {
    const streams = [this.child.stdout!, this.child.stderr!];
    const closed = Promise.all(streams.map((s) => (s.closed ? undefined : new Promise((r) => s.once('close', r)))));
    for (;;) {
      const done = await Promise.race([closed.then(() => true), sleep(1000).then(() => false)]);
      if (done) return;
      if (!this.output.paused) return streams.forEach((s) => s.destroy());
    }
  }
}

class LocalRuntime implements Runtime {
  readonly name = 'local';

  constructor(private readonly options: Options, private readonly logger: Logger) {}

  private owner(): { uid: number; gid: number } | null {
    const { run_as_uid: uid, run_as_gid: gid } = this.options;
    if (uid === null && gid === null) return null;
    if (process.getuid?.() !== 0) {
      this.logger.warn({ uid, gid }, 'runtime local: run_as_uid/run_as_gid ignored because the server is not root');
      return null;
    }
    return { uid: uid ?? 0, gid: gid ?? uid ?? 0 };
  }

  async start(spec: ProcessSpec): Promise<RunningProcess> {
    const owner = this.owner();
    if (spec.files) await writeFiles(spec.cwd, spec.files, owner);
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: childEnv(spec.env),
      detached: true, // new process group led by the child
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(owner ?? {}),
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    return new LocalProcess(child, this.options.kill_grace_ms, spec.timeoutMs);
  }
}

export default defineAdapter<Runtime, Options>({
  kind: 'runtime',
  name: 'local',
  options: optionsSchema,
  create: (options, deps) => new LocalRuntime(options, deps.logger),
});
