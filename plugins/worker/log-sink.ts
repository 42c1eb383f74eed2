import type { Logger } from 'pino';
import type { AttemptControl, LogLine, LogStream } from '../../core/ports/attempts.ts';
import { storableText } from '../../core/db/storable.ts';

/** A batch this big goes out at once, and the producer waits for it (backpressure on the process's output). */
const MAX_BATCH = 500;

/**
 * An attempt's output on its way to the attempt log: numbered, masked, and appended in batches at
 * most `flushMs` apart (one transaction each). Appends are serialized so seq order is commit order.
 */
export class LogSink {
  private seq = 0;
  private buffer: LogLine[] = [];
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly control: AttemptControl,
    private readonly jobId: string,
    private readonly attemptId: string,
    private readonly flushMs: number,
    private readonly logger: Logger,
    /** Secret masking; replaced once the secrets of the attempt are known. */
    public mask: (text: string) => string = (t) => t,
  ) {}

  /** Resolves at once unless the batch is full, then when it is written. */
  add(stream: LogStream, line: string): Promise<void> {
    // Output is bytes from anywhere: a NUL or a lone surrogate would fail the whole batch's insert.
    this.buffer.push({ seq: ++this.seq, stream, line: storableText(this.mask(line)), at: new Date() });
    if (this.buffer.length >= MAX_BATCH) return this.flush();
    this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
    return Promise.resolve();
  }

  system(line: string): Promise<void> {
    return this.add('system', line);
  }

  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.buffer;
    this.buffer = [];
    if (batch.length === 0) return this.chain;
    this.chain = this.chain.then(() =>
      this.control.appendLogs(this.jobId, this.attemptId, batch).catch((err) => {
        this.logger.warn({ err, attemptId: this.attemptId, lines: batch.length }, 'attempt log lines could not be stored');
      }),
    );
    return this.chain;
  }
}
