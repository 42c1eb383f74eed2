import type { HarnessDefinition, HarnessEvent } from '../../core/ports/harness.ts';
import type { OutputLine } from '../../core/ports/runtime.ts';
import type { UsageCall } from '../../core/ports/attempts.ts';
import type { LogSink } from './log-sink.ts';
import type { JsonResultScanner } from './result.ts';

/**
 * A harness CLI's output into the attempt: each line through the harness's parser; message text
 * (streamed fragments joined) into the log line by line and into the json-result scanner; tools and
 * errors as log lines; usage and progress to the attempt's hooks. stderr lines the parser has nothing
 * for are logged raw (and never scanned for the result block).
 */
export class HarnessOutput {
  /** The unfinished last line of the message being streamed. */
  private partial = '';

  constructor(
    private readonly harness: HarnessDefinition,
    private readonly log: LogSink,
    private readonly scanner: JsonResultScanner,
    private readonly defaultModel: string,
    private readonly hooks: { usage(call: UsageCall): Promise<void>; progress(message: string, percentage: number | null): Promise<void> },
  ) {}

  async line(out: OutputLine): Promise<void> {
    let events: HarnessEvent[];
    try {
      events = this.harness.parseLine(out.line);
    } catch {
      events = [{ type: 'raw', text: out.line }];
    }
    if (events.length === 0 && out.stream === 'stderr') events = [{ type: 'raw', text: out.line }];
    for (const event of events) await this.event(event, out.stream);
  }

  /** The process ended: the rest of the last message. */
  async end(): Promise<void> {
    await this.message('', false);
  }

  private async event(event: HarnessEvent, stream: OutputLine['stream']): Promise<void> {
    switch (event.type) {
      case 'message':
        return this.message(event.text, event.delta === true);
      case 'tool':
        return this.log.add('stdout', `[tool] ${event.name}`);
      case 'error':
        return this.log.add('stderr', event.message);
      case 'progress': {
        const percentage =
          typeof event.percentage === 'number' && Number.isFinite(event.percentage) ? Math.min(100, Math.max(0, Math.round(event.percentage))) : null;
        await this.log.add('stdout', `[progress]${percentage === null ? '' : ` ${percentage}%`} ${event.message}`);
        return this.hooks.progress(event.message, percentage);
      }
      case 'usage':
        return this.hooks.usage({
          model: event.model ?? this.defaultModel,
          input_tokens: event.inputTokens,
          output_tokens: event.outputTokens,
          ...(event.cacheReadTokens !== undefined ? { cache_read_tokens: event.cacheReadTokens } : {}),
          ...(event.cacheWriteTokens !== undefined ? { cache_write_tokens: event.cacheWriteTokens } : {}),
          ...(event.reasoningTokens !== undefined ? { reasoning_tokens: event.reasoningTokens } : {}),
          ...(event.durationMs !== undefined ? { duration_ms: event.durationMs } : {}),
          ...(event.costUsd !== undefined ? { reported_cost_usd: event.costUsd } : {}),
        });
      case 'raw':
        // The result block is the agent's output on stdout. stderr is another pipe, read in its own
        // order: a line from it could land inside a block and break it.
        if (stream === 'stdout') this.scanner.pushText(this.log.mask(event.text));
        return this.log.add(stream, event.text);
    }
  }

  /** A fragment continues the current message; a whole message first finishes the one before. */
  private async message(text: string, delta: boolean): Promise<void> {
    if (!delta) {
      if (this.partial !== '') await this.emit(this.partial);
      this.partial = '';
      if (text !== '') for (const line of text.split('\n')) await this.emit(line);
      return;
    }
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) await this.emit(line);
  }

  private emit(line: string): Promise<void> {
    this.scanner.push(this.log.mask(line));
    return this.log.add('stdout', line);
  }
}
