import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { NotifyBus } from '../../core/db/notify-bus.ts';
import { LineLog, type LoggedLine } from '../../core/db/line-log.ts';
import { storableText } from '../../core/db/storable.ts';
import { secretMasker } from '../../core/secrets/mask.ts';

/** Keys are deploy ids: lines appended, or the deploy ended. */
export const DEPLOY_LOG_CHANNEL = 'svc_deploy_logs';
/** Lines a deploy keeps at most (a deployer reporting every poll must not fill the table); the rest are counted. */
export const MAX_DEPLOY_LOG_LINES = 2000;
/** Longer lines are cut (a health check's output, an API's error body). */
export const MAX_DEPLOY_LOG_LINE = 4000;

/** `system`: what svc did (started, the release, the outcome); `deployer`: what the deployer reported. */
export type DeployLogStream = 'system' | 'deployer';

@injectable()
export class DeployLogBus extends NotifyBus {
  constructor(@inject(Tokens.Db) db: Db, @inject(Tokens.DatabaseUrl) databaseUrl: string, @inject(Tokens.Logger) logger: Logger) {
    super(DEPLOY_LOG_CHANNEL, 'deploy log', db, databaseUrl, logger);
  }
}

/** The `environment_deploy_logs` table: a deploy's lines by seq, paged or streamed. */
@injectable()
export class DeployLogs extends LineLog<DeployLogStream> {
  constructor(@inject(Tokens.Db) db: Db, @inject(DeployLogBus) bus: DeployLogBus) {
    super(db, 'environment_deploy_logs', 'deploy_id', bus);
  }

  /** `after`: the seq the log has reached (a deploy taken over from a process that died goes on after its lines). */
  writer(deployId: string, logger: Logger, after = 0): DeployLogWriter {
    return new DeployLogWriter(this, deployId, logger, after);
  }
}

/**
 * One deploy's log as the deploy goes: consecutive seqs from 1, secret values masked (`mask`),
 * long lines cut. A line is inserted at once unless a write is in flight; the lines that came
 * meanwhile go together in the next insert, so a chatty deployer costs few statements. Past
 * MAX_DEPLOY_LOG_LINES lines are only counted; `end` says how many, with the last lines, in the
 * transaction that ends the deploy (so a stream that ends with the deploy has read them all).
 */
export class DeployLogWriter {
  private dropped = 0;
  private pending: Omit<LoggedLine<DeployLogStream>, 'at'>[] = [];
  private writing: Promise<void> = Promise.resolve();
  private maskText: (text: string) => string = (text) => text;

  constructor(
    private readonly logs: DeployLogs,
    private readonly deployId: string,
    private readonly logger: Logger,
    private seq = 0,
  ) {
    this.bound = seq + MAX_DEPLOY_LOG_LINES;
  }

  /** A writer going on after another's lines still keeps at most MAX_DEPLOY_LOG_LINES of its own. */
  private readonly bound: number;

  /** From now on these values (the deploy's secrets) never reach the log, nor their encodings. */
  mask(secrets: string[]): void {
    this.maskText = secretMasker(secrets);
  }

  /** What svc or the deployer says; returns the line as stored (masked and cut). */
  readonly write = (raw: string, stream: DeployLogStream = 'deployer'): string => {
    const line = this.clean(raw);
    if (this.seq >= this.bound) {
      this.dropped += 1;
      return line;
    }
    this.pending.push({ seq: ++this.seq, stream, line });
    if (this.pending.length === 1) this.writing = this.writing.then(() => this.flush());
    return line;
  };

  /** `raw` as the log keeps it: secret values masked, storable, cut at MAX_DEPLOY_LOG_LINE. */
  clean(raw: string): string {
    const line = storableText(this.maskText(raw));
    return line.length > MAX_DEPLOY_LOG_LINE ? `${line.slice(0, MAX_DEPLOY_LOG_LINE)} … (cut)` : line;
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    await this.logs.append(this.deployId, batch).catch((err) => this.logger.warn({ err, deployId: this.deployId }, 'deploy log write failed'));
  }

  /** Resolves once the lines written so far are in (a transaction need not stay open waiting for them). */
  written(): Promise<void> {
    return this.writing;
  }

  /** Waits for the lines in flight, then writes the last ones (svc's) in `trx`, past the bound too. */
  async end(lines: string[], trx: Db): Promise<void> {
    await this.writing;
    const last = [...(this.dropped ? [`… ${this.dropped} more lines of the deployer were not kept (at most ${MAX_DEPLOY_LOG_LINES})`] : []), ...lines];
    await this.logs.append(
      this.deployId,
      last.map((l) => ({ seq: ++this.seq, stream: 'system' as const, line: this.clean(l) })),
      trx,
    );
  }
}
