import type { Logger } from 'pino';
import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { afterCommit } from '../../../core/db/after-commit.ts';
import { NotifyBus } from '../../../core/db/notify-bus.ts';
import type { Page } from '../../../core/http/lists.ts';
import { AttemptLogListeners, type LogLine } from '../../../core/ports/attempts.ts';
import type { JobPhaseListener } from '../../../core/ports/jobs.ts';

/**
 * The channel that tells other processes a job's attempt logs changed: lines appended, or an attempt
 * ended (every end moves the job's phase). Keys are job ids; the payload is `<instance> <job id>…`.
 */
export const LOG_CHANNEL = 'svc_attempt_logs';
/** Lines per read of a stream. */
const STREAM_BATCH = 500;

@injectable()
export class AttemptLogBus extends NotifyBus {
  constructor(@inject(Tokens.Db) db: Db, @inject(Tokens.DatabaseUrl) databaseUrl: string, @inject(Tokens.Logger) logger: Logger) {
    super(LOG_CHANNEL, 'attempt log', db, databaseUrl, logger);
  }
}

export type StoredLine = LogLine;

/** The `attempt_logs` table: appends (with the listeners and the bus), pages and stream reads by seq. */
@injectable()
export class AttemptLogs {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(AttemptLogBus) readonly bus: AttemptLogBus,
    @inject(AttemptLogListeners) private readonly listeners: AttemptLogListeners,
  ) {}

  /** One transaction per batch: the lines, and what follows them (a pipeline run's step.log events). */
  async append(jobId: string, attemptId: string, lines: LogLine[]): Promise<void> {
    if (lines.length === 0) return;
    await this.db.transaction(async (trx) => {
      const rows = lines.map((l) => ({ attempt_id: attemptId, seq: l.seq, stream: l.stream, line: l.line, at: l.at }));
      const inserted: LogLine[] = await trx('attempt_logs').insert(rows).onConflict(['attempt_id', 'seq']).ignore().returning(['seq', 'stream', 'line', 'at']);
      if (inserted.length === 0) return;
      const job = await trx('jobs').where({ id: jobId }).first('hints');
      await this.listeners.appended({ job_id: jobId, attempt_id: attemptId, hints: job?.hints ?? {}, lines: inserted }, trx);
      afterCommit(trx, () => this.bus.publish(jobId));
    });
  }

  /** Lines after `afterSeq` in seq order, `limit` from `offset`, with the total after `afterSeq`. */
  async page(attemptId: string, afterSeq: number, { limit, offset }: { limit: number; offset: number }): Promise<Page<StoredLine>> {
    const q = this.db('attempt_logs').where({ attempt_id: attemptId }).andWhere('seq', '>', afterSeq);
    const [data, counted] = await Promise.all([
      q.clone().orderBy('seq').limit(limit).offset(offset).select('seq', 'stream', 'line', 'at'),
      q.clone().count({ n: '*' }).first(),
    ]);
    const total = Number((counted as { n: unknown }).n);
    return { data, pagination: { limit, offset, count: data.length, total, has_more: offset + data.length < total } };
  }

  /** The JobPhaseListener: a job leaving active means its running attempt ended, which ends its log streams. */
  readonly phasesChanged: JobPhaseListener = async (jobs, trx) => {
    for (const job of jobs) if (job.phase !== 'active') afterCommit(trx, () => this.bus.publish(job.id));
  };

  after(attemptId: string, afterSeq: number): Promise<StoredLine[]> {
    return this.db('attempt_logs')
      .where({ attempt_id: attemptId })
      .andWhere('seq', '>', afterSeq)
      .orderBy('seq')
      .limit(STREAM_BATCH)
      .select('seq', 'stream', 'line', 'at');
  }
}
