import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { NotifyBus } from '../../core/db/notify-bus.ts';
import { afterCommit } from '../../core/db/after-commit.ts';
import type { Page } from '../../core/http/lists.ts';

/** Keys are build run ids: lines appended, or the run ended. */
export const BUILD_LOG_CHANNEL = 'svc_build_logs';
const STREAM_BATCH = 500;

export interface BuildLogLine {
  seq: number;
  stream: 'stdout' | 'stderr' | 'system';
  line: string;
  at: Date;
}

@injectable()
export class BuildLogBus extends NotifyBus {
  constructor(@inject(Tokens.Db) db: Db, @inject(Tokens.DatabaseUrl) databaseUrl: string, @inject(Tokens.Logger) logger: Logger) {
    super(BUILD_LOG_CHANNEL, 'build log', db, databaseUrl, logger);
  }
}

/** The `build_logs` table: a run's builder output by seq, paged or streamed. */
@injectable()
export class BuildLogs {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(BuildLogBus) readonly bus: BuildLogBus,
  ) {}

  async append(runId: string, lines: Omit<BuildLogLine, 'at'>[], db: Db = this.db): Promise<void> {
    if (lines.length === 0) return;
    await db('build_logs')
      .insert(lines.map((l) => ({ run_id: runId, ...l })))
      .onConflict(['run_id', 'seq'])
      .ignore();
    afterCommit(db, () => this.bus.publish(runId));
  }

  async page(runId: string, afterSeq: number, { limit, offset }: { limit: number; offset: number }): Promise<Page<BuildLogLine>> {
    const q = this.db('build_logs').where({ run_id: runId }).andWhere('seq', '>', afterSeq);
    const [data, counted] = await Promise.all([
      q.clone().orderBy('seq').limit(limit).offset(offset).select('seq', 'stream', 'line', 'at'),
      q.clone().count({ n: '*' }).first(),
    ]);
    const total = Number((counted as { n: unknown }).n);
    return { data, pagination: { limit, offset, count: data.length, total, has_more: offset + data.length < total } };
  }

  after(runId: string, afterSeq: number): Promise<BuildLogLine[]> {
    return this.db('build_logs')
      .where({ run_id: runId })
      .andWhere('seq', '>', afterSeq)
      .orderBy('seq')
      .limit(STREAM_BATCH)
      .select('seq', 'stream', 'line', 'at');
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
  private seq = 0;
  private pending: Omit<BuildLogLine, 'at'>[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly logs: BuildLogs,
    private readonly runId: string,
    private readonly flushMs: number,
    private readonly logger: Logger,
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
