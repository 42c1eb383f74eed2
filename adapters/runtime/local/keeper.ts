import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';

const KEEPER = fileURLToPath(new URL('./keeper-process.js', import.meta.url));
/** A keeper that exits on its own this soon after its start did not start at all. */
const QUICK_EXIT_MS = 2_000;

/**
 * Makes attempt process groups die with the worker that started them. Each attempt leads its own
 * process group (so its whole tree can be signalled), which also means killing the server does not
 * kill it. The keeper is one small child process per worker, in a session of its own (a kill of the
 * server's process group does not reach it), told over a pipe which groups are running; when the
 * pipe closes because the worker is gone, however it went, the keeper SIGKILLs those groups.
 * docs/decisions.md (Reliability) says why this and not a parent-death signal or a pidfile.
 */
export class GroupKeeper {
  private keeper: ChildProcess | null = null;
  /** Running groups, told again to a keeper started after the first one died. */
  private readonly groups = new Set<number>();

  constructor(private readonly logger: Logger) {}

  /** Call before spawning, so the keeper is running by the time a group is announced. */
  prepare(): void {
    this.ensure();
  }

  /** Call right after the group's leader has spawned. */
  started(pgid: number): void {
    this.groups.add(pgid);
    this.send(`+${pgid}\n`);
  }

  /** Call once the whole group has ended. */
  ended(pgid: number): void {
    this.groups.delete(pgid);
    this.send(`-${pgid}\n`);
  }

  private send(line: string): void {
    const keeper = this.ensure();
    if (!keeper?.stdin?.writable) return;
    keeper.stdin.write(line);
  }

  private ensure(): ChildProcess | null {
    if (this.keeper && this.keeper.exitCode === null && this.keeper.signalCode === null) return this.keeper;
    try {
      const keeper = spawn(process.execPath, [KEEPER], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
      keeper.on('error', (err) => this.logger.error({ err }, 'runtime local: the process keeper failed; attempts would outlive a crash of this worker'));
      const startedAt = Date.now();
      keeper.on('exit', (code, signal) => {
        if (this.keeper !== keeper) return;
        this.keeper = null;
        // One that dies as it starts would die again at once: the next attempt's start tries again.
        if (Date.now() - startedAt < QUICK_EXIT_MS && signal === null) {
          this.logger.error({ code, keeper: KEEPER }, 'runtime local: the process keeper could not start; attempts would outlive a crash of this worker');
          return;
        }
        this.logger.warn({ code, signal, running: this.groups.size }, 'runtime local: the process keeper exited; starting another');
        if (this.groups.size > 0) this.ensure();
      });
      keeper.stdin!.on('error', () => undefined);
      // Neither the keeper nor its pipe keeps this process alive.
      keeper.unref();
      (keeper.stdin as unknown as { unref?: () => void }).unref?.();
      this.keeper = keeper;
      if (this.groups.size > 0) keeper.stdin!.write([...this.groups].map((g) => `+${g}\n`).join(''));
      return keeper;
    } catch (err) {
      this.logger.error({ err }, 'runtime local: could not start the process keeper');
      return null;
    }
  }
}
