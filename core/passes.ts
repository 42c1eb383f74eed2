/**
 * Runs `pass` when woken: at once when idle, else once more right after the pass in progress
 * (every wake meanwhile folds into that one). A failed pass goes to `onError`; nothing runs
 * after `stop()`, which waits for the pass in progress.
 */
export class Passes {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

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
    await this.running;
  }
}
