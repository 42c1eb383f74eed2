import type { OutputLine } from '../../../core/ports/runtime.ts';

/** Longer lines are cut into pieces of this many characters. */
const MAX_LINE_CHARS = 1024 * 1024;
/** Buffered output beyond which a reading reader holds the log stream (the node keeps the log meanwhile). */
const MAX_BUFFERED_CHARS = 8 * 1024 * 1024;

/**
 * The container log as lines. The log endpoint interleaves stdout and stderr in one stream, so every
 * line is reported as stdout. With a reader, a full buffer pauses the log stream (backpressure);
 * before one attaches, old lines are dropped instead; after it leaves, lines are discarded.
 */
export class LogLines {
  private readonly lines: OutputLine[] = [];
  private head = 0;
  private buffered = 0;
  private dropped = 0;
  private ended = false;
  private wake?: () => void;
  private drained?: () => void;
  private reader: 'none' | 'reading' | 'gone' = 'none';

  push(text: string): void {
    if (this.reader === 'gone') return;
    for (let i = 0; i < text.length || i === 0; i += MAX_LINE_CHARS) {
      const line = text.slice(i, i + MAX_LINE_CHARS);
      this.lines.push({ stream: 'stdout', line });
      this.buffered += line.length;
    }
    while (this.reader === 'none' && this.buffered > MAX_BUFFERED_CHARS) {
      this.shift();
      this.dropped += 1;
    }
    this.wake?.();
  }

  /** A synthetic line from the runtime itself (why the pod ended), on stderr. */
  note(line: string): void {
    if (this.reader === 'gone') return;
    this.lines.push({ stream: 'stderr', line });
    this.wake?.();
  }

  /** Resolves once the reader has room again (at once when no reader holds the stream back). */
  room(): Promise<void> {
    if (this.reader !== 'reading' || this.buffered <= MAX_BUFFERED_CHARS) return Promise.resolve();
    return new Promise((resolve) => (this.drained = resolve));
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  private shift(): OutputLine {
    const item = this.lines[this.head++];
    if (this.head > 1024 && this.head * 2 > this.lines.length) {
      this.lines.splice(0, this.head);
      this.head = 0;
    }
    this.buffered -= item.line.length;
    if (this.buffered <= MAX_BUFFERED_CHARS / 2) this.release();
    return item;
  }

  private release(): void {
    const drained = this.drained;
    this.drained = undefined;
    drained?.();
  }

  async *iterate(): AsyncGenerator<OutputLine> {
    if (this.reader !== 'none') throw new Error('runtime: lines() can be consumed only once');
    this.reader = 'reading';
    try {
      if (this.dropped > 0) yield { stream: 'stderr', line: `[svc: ${this.dropped} earlier output lines dropped before anyone read them]` };
      for (;;) {
        if (this.head < this.lines.length) yield this.shift();
        else if (this.ended) return;
        else await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      this.reader = 'gone';
      this.lines.length = 0;
      this.head = 0;
      this.buffered = 0;
      this.release();
    }
  }
}
