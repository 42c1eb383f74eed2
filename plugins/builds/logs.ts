import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { NotifyBus } from '../../core/db/notify-bus.ts';
import { LineLog, type LoggedLine } from '../../core/db/line-log.ts';

/** Keys are build run ids: lines appended, or the run ended. */
export const BUILD_LOG_CHANNEL = 'svc_build_logs';

export type BuildLogLine = LoggedLine<'stdout' | 'stderr' | 'system'>;

@injectable()
export class BuildLogBus extends NotifyBus {
  constructor(@inject(Tokens.Db) db: Db, @inject(Tokens.DatabaseUrl) databaseUrl: string, @inject(Tokens.Logger) logger: Logger) {
    super(BUILD_LOG_CHANNEL, 'build log', db, databaseUrl, logger);
  }
}

/** The bus key that says only "run `runId` ended" (a waiting pipeline step hears that, not every line). */
export const runEndKey = (runId: string): string => `${runId}:end`;

/** A run ended: its log followers (they read the end) and whoever waits for the end hear it. */
export function publishRunEnd(bus: NotifyBus, runId: string): void {
  bus.publish(runId);
  bus.publish(runEndKey(runId));
}

/** The `build_logs` table: a run's builder output by seq, paged or streamed. */
@injectable()
export class BuildLogs extends LineLog<BuildLogLine['stream']> {
  constructor(@inject(Tokens.Db) db: Db, @inject(BuildLogBus) bus: BuildLogBus) {
    super(db, 'build_logs', 'run_id', bus);
  }

  /** The last `n` lines, oldest first. */
  async tail(runId: string, n: number): Promise<string[]> {
    const rows = await this.db('build_logs').where({ run_id: runId }).orderBy('seq', 'desc').limit(n).select('line');
    return rows.map((r) => r.line as string).reverse();
  }
}

/**
 * Collects a run's output lines and writes them in batches (every `flushMs`, and at the end), so a
 * chatty builder costs a few inserts a second. Lines get consecutive seqs from 1.
 */
export class BuildLogSink {
  private pending: Omit<BuildLogLine, 'at'>[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly logs: BuildLogs,
    private readonly runId: string,
    private readonly flushMs: number,
    private readonly logger: Logger,
    /** The seq the log has reached (a run taken over from a runner that died goes on after its lines). */
    private seq = 0,
  ) {}

  write = (line: string, stream: BuildLogLine['stream'] = 'stdout'): void => {
    this.pending.push({ seq: ++this.seq, stream, line });
    this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
  };

  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    this.flushing = this.flushing
      .then(() => this.logs.append(this.runId, batch))
      .catch((err) => this.logger.warn({ err, runId: this.runId }, 'build log write failed'));
    return this.flushing;
  }
}
