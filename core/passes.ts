import type { Logger } from 'pino';
import type { Notifier } from './db/notify.ts';
import { listen } from './db/listen.ts';

/**
 * Runs `pass` when woken: at once when idle, else once more right after the pass in progress
 * (every wake meanwhile folds into that one). A failed pass goes to `onError`. What wakes it
 * (notices, polls) is attached with `wakeOn` and `every`; `stop()` detaches all of it, and then
 * waits for the pass in progress. Nothing runs after `stop()`.
 */
export class Passes {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private readonly detach: (() => unknown)[] = [];

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Wakes on every notice of `notifier`: this process's at once, other processes' through LISTEN on its channel. */
  async wakeOn(notifier: Notifier, databaseUrl: string, logger: Logger, retryMs?: number): Promise<void> {
    this.detach.push(notifier.onNotice(() => this.wake()));
    const listening = await listen(databaseUrl, notifier.channel, () => this.wake(), logger, retryMs);
    this.detach.push(() => listening.close());
  }

  /** Every `ms`, wakes (the backstop for a lost notice), or runs `task` instead. */
  every(ms: number, task: () => void = () => this.wake()): void {
    const timer = setInterval(task, ms);
    this.detach.push(() => clearInterval(timer));
  }

  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .catch(this.onError)
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.detach.splice(0).map((detach) => detach()));
    await this.running;
  }
}
