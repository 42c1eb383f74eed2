/** Output of a running process as lines: splitting, interleaving stdout and stderr, backpressure. Shared by the runtimes. */
import type { Readable } from 'node:stream';
import type { OutputLine } from '../../core/ports/runtime.ts';

/** Longer lines are cut into pieces of this many bytes. */
const MAX_LINE_BYTES = 1024 * 1024;
/** Buffered output beyond which a reader makes the process wait (or, with no reader yet, old lines are dropped). */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

/** Interleaves both streams into one line queue; the queue ends when both streams have ended. */
export class LineQueue {
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
