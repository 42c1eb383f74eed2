/** Output of a running process as lines: the read buffer with backpressure, and stream splitting. Shared by the runtimes. */
import type { Readable } from 'node:stream';
import type { OutputLine } from '../../core/ports/runtime.ts';

/** Longer lines are cut into pieces of this many bytes. */
export const MAX_LINE_BYTES = 1024 * 1024;
/** Buffered output beyond which a reader holds the producer back (or, with no reader yet, old lines are dropped). */
const MAX_BUFFERED = 8 * 1024 * 1024;

/** How a buffer slows its producer down while its reader is behind. */
export interface Pressure {
  hold(): void;
  release(): void;
}

/**
 * Lines waiting for the one reader of `iterate()`. Over the limit, a reading reader gets
 * backpressure (`hold` until it has read half of it); before one attaches, the oldest lines are
 * dropped and counted; once it has left, lines are discarded.
 */
export class LineBuffer {
  private readonly lines: OutputLine[] = [];
  private head = 0; // index of the oldest unread line (Array#shift is O(n))
  private buffered = 0;
  private dropped = 0;
  private ended = false;
  private holding = false;
  /** Resolves the reader's current wait; calling it again after that is harmless. */
  private wake?: () => void;
  private reader: 'none' | 'reading' | 'gone' = 'none';

  constructor(private readonly pressure: Pressure) {}

  /** True while the reader holds the producer back. */
  get held(): boolean {
    return this.holding;
  }

  push(item: OutputLine): void {
    if (this.reader === 'gone') return;
    this.lines.push(item);
    this.buffered += item.line.length;
    if (this.buffered > MAX_BUFFERED) {
      if (this.reader === 'reading') this.hold();
      else
        while (this.buffered > MAX_BUFFERED / 2) {
          this.shift();
          this.dropped += 1;
        }
    }
    this.wake?.();
  }

  /** No more lines: the reader ends once it has read the rest. */
  end(): void {
    this.ended = true;
    this.wake?.();
  }

  private hold(): void {
    if (this.holding) return;
    this.holding = true;
    this.pressure.hold();
  }

  private release(): void {
    if (!this.holding) return;
    this.holding = false;
    this.pressure.release();
  }

  private shift(): OutputLine {
    const item = this.lines[this.head++];
    if (this.head > 1024 && this.head * 2 > this.lines.length) {
      this.lines.splice(0, this.head);
      this.head = 0;
    }
    this.buffered -= item.line.length;
    if (this.buffered <= MAX_BUFFERED / 2) this.release();
    return item;
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
      // A reader that stops early must not leave the producer held back.
      this.reader = 'gone';
      this.lines.length = 0;
      this.head = 0;
      this.buffered = 0;
      this.release();
    }
  }
}

/**
 * A process's stdout and stderr split into lines (a line longer than MAX_LINE_BYTES in pieces,
 * never inside a UTF-8 character) in one buffer, which ends when both streams have closed; a slow
 * reader pauses the streams.
 */
export class LineQueue {
  private readonly streams: Readable[] = [];
  private openStreams = 0;
  private readonly buffer = new LineBuffer({
    hold: () => this.streams.forEach((s) => s.pause()),
    release: () => this.streams.forEach((s) => s.resume()),
  });

  /** True while a slow reader holds the streams paused. */
  get paused(): boolean {
    return this.buffer.held;
  }

  add(stream: Readable, name: OutputLine['stream']): void {
    this.openStreams += 1;
    this.streams.push(stream);
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const emit = (buf: Buffer) => this.buffer.push({ stream: name, line: buf.toString('utf8').replace(/\r$/, '') });
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
      if (this.openStreams === 0) this.buffer.end();
    });
  }

  iterate(): AsyncGenerator<OutputLine> {
    return this.buffer.iterate();
  }
}
