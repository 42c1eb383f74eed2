/**
 * Runtime port on this machine: each attempt is a child process leading its own process group, so the
 * whole tree can be signalled at once. Processes that call setsid() leave the group and escape. The
 * groups die with this worker even when it crashes (keeper.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { lchown, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Joi from 'joi';
import type { Logger } from 'pino';
import type { OutputLine, ProcessExit, ProcessSpec, RunningProcess, Runtime } from '../../../core/ports/runtime.ts';
import { defineAdapter } from '../../../core/sdk.ts';
import { directoryIn } from '../../../core/contained-fs.ts';
import { sandboxArgs } from '../../../core/sandbox.ts';
import { writeFiles } from '../files.ts';
import { LineQueue } from '../lines.ts';
import { GroupKeeper } from './keeper.ts';

/** The home of a process that runs as another user, in its workspace. */
const HOME_PATH = ['.svc', 'home'];

type Options = {
  kill_grace_ms: number;
};

const optionsSchema = Joi.object({
  kill_grace_ms: Joi.number().integer().min(0).default(5000).description('After SIGTERM to the process group, wait this long before SIGKILL.'),
});

function childEnv(specEnv: Record<string, string>): Record<string, string> {
  const inherited = Object.fromEntries(['PATH', 'HOME'].filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]!]));
  return { ...inherited, ...specEnv };
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
  try {
    process.kill(-pgid, signal);
  } catch {
    /* ESRCH: the group is already gone */
  }
}

class LocalProcess implements RunningProcess {
  readonly exited: Promise<ProcessExit>;
  private readonly output = new LineQueue();
  private timedOut = false;
  private killing?: Promise<void>;
  private leaderExited = false;

  constructor(
    private readonly child: ChildProcess,
    private readonly graceMs: number,
    timeoutMs: number | undefined,
    keeper: GroupKeeper,
  ) {
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
      keeper.ended(child.pid!);
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

/**
 * A process that runs as another user gets a home of its own in the workspace (the server's is not
 * theirs to write). The checkout may have put a link at `.svc` or `.svc/home`: it is refused, never
 * followed, and ownership changes touch the folders themselves (lchown).
 */
async function homeFor(cwd: string, owner: { uid: number; gid: number }): Promise<string> {
  const home = await directoryIn(cwd, HOME_PATH, 0o700);
  await lchown(path.dirname(home), owner.uid, owner.gid);
  await lchown(home, owner.uid, owner.gid);
  return home;
}

const selfUser = () => ({ uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 });

class LocalRuntime implements Runtime {
  readonly name = 'local';
  private readonly keeper: GroupKeeper;

  constructor(
    private readonly options: Options,
    private readonly logger: Logger,
  ) {
    this.keeper = new GroupKeeper(logger);
  }

  /** `spec.user` needs root to switch to; a server running as anyone else runs processes as itself. */
  private owner(spec: ProcessSpec): { uid: number; gid: number } | null {
    if (!spec.user) return null;
    if (process.getuid?.() === 0) return spec.user;
    if (process.getuid?.() !== spec.user.uid) this.logger.debug({ user: spec.user }, "runtime local: not root, so processes run as the server's own user");
    return null;
  }

  async start(spec: ProcessSpec): Promise<RunningProcess> {
    const owner = this.owner(spec);
    if (spec.files) await writeFiles(spec.cwd, spec.files, owner);
    const env = childEnv(spec.env);
    // In the sandbox the server's own home is not there to be used.
    if ((owner || spec.sandbox) && spec.env.HOME === undefined) env.HOME = await homeFor(spec.cwd, owner ?? selfUser());
    // Sandboxed, bubblewrap starts as the server's user and drops to the owner inside.
    const { command, args } = spec.sandbox
      ? sandboxArgs(spec.command, spec.args, spec.cwd, { ...spec.sandbox, user: owner })
      : { command: spec.command, args: spec.args };
    this.keeper.prepare();
    const child = spawn(command, args, {
      cwd: spec.cwd,
      env,
      detached: true, // new process group led by the child
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(owner && !spec.sandbox ? owner : {}),
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => {
        this.keeper.started(child.pid!);
        resolve();
      });
      child.once('error', reject);
    });
    return new LocalProcess(child, this.options.kill_grace_ms, spec.timeoutMs, this.keeper);
  }
}

export default defineAdapter<Runtime, Options>({
  kind: 'runtime',
  name: 'local',
  options: optionsSchema,
  create: (options, deps) => new LocalRuntime(options, deps.logger),
});
