import type { OutputLine } from '../../core/ports/runtime.ts';
import { LineBuffer, MAX_LINE_BYTES } from '../runtime/lines.ts';

/**
 * The container log as lines. The log endpoint interleaves stdout and stderr in one stream, so every
 * line is reported as stdout; the runtime's own notes go to stderr. A reader that falls behind makes
 * `room()` wait, which holds the log stream (the node keeps the log meanwhile).
 */
export class LogLines {
  private waiting: { promise: Promise<void>; resolve: () => void } | null = null;
  private readonly buffer = new LineBuffer({
    hold: () => {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.waiting = { promise, resolve };
    },
    release: () => {
      this.waiting?.resolve();
      this.waiting = null;
    },
  });

  /** One log line, in pieces of at most MAX_LINE_BYTES characters. */
  push(text: string): void {
    for (let i = 0; i < text.length || i === 0; i += MAX_LINE_BYTES) this.buffer.push({ stream: 'stdout', line: text.slice(i, i + MAX_LINE_BYTES) });
  }

  /** A line from the runtime itself (why the pod ended), on stderr. */
  note(line: string): void {
    this.buffer.push({ stream: 'stderr', line });
  }

  /** Resolves once the reader has room again (at once when nothing holds the stream back). */
  room(): Promise<void> {
    return this.waiting?.promise ?? Promise.resolve();
  }

  end(): void {
    this.buffer.end();
  }

  iterate(): AsyncGenerator<OutputLine> {
    return this.buffer.iterate();
  }
}
