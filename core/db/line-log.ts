import type { Db } from './knex.ts';
import type { NotifyBus } from './notify-bus.ts';
import { afterCommit } from './after-commit.ts';
import type { Page } from '../http/lists.ts';

/** One line of a log kept by seq. */
export interface LoggedLine<S extends string = string> {
  seq: number;
  stream: S;
  line: string;
  at: Date;
}

/** Lines one read of a stream returns at most (core/http/sse.ts reads again until none is left). */
const STREAM_BATCH = 500;

/**
 * A log of lines its owner keeps in `table` by (`key` column, seq): a build run's, a deploy's.
 * Appends are idempotent per seq and tell `bus` the key once they commit; pages carry the total;
 * `after` feeds a server-sent event stream. The owning domain's repository extends it, naming its
 * own table.
 */
export class LineLog<S extends string> {
  constructor(
    protected readonly db: Db,
    private readonly table: string,
    private readonly key: string,
    readonly bus: NotifyBus,
  ) {}

  async append(id: string, lines: Omit<LoggedLine<S>, 'at'>[], db: Db = this.db): Promise<void> {
    if (lines.length === 0) return;
    await db(this.table)
      .insert(lines.map((l) => ({ [this.key]: id, ...l })))
      .onConflict([this.key, 'seq'])
      .ignore();
    afterCommit(db, () => this.bus.publish(id));
  }

  /** The highest seq `id` has (0 for none): where a writer that takes over a log goes on. */
  async lastSeq(id: string, db: Db = this.db): Promise<number> {
    const row = (await db(this.table)
      .where({ [this.key]: id })
      .max({ seq: 'seq' })
      .first()) as { seq: number | null } | undefined;
    return Number(row?.seq ?? 0);
  }

  /** Lines after `afterSeq` in seq order, `limit` from `offset`, with the total after `afterSeq`. */
  async page(id: string, afterSeq: number, { limit, offset }: { limit: number; offset: number }): Promise<Page<LoggedLine<S>>> {
    const q = this.db(this.table)
      .where({ [this.key]: id })
      .andWhere('seq', '>', afterSeq);
    const [data, counted] = await Promise.all([
      q.clone().orderBy('seq').limit(limit).offset(offset).select('seq', 'stream', 'line', 'at'),
      q.clone().count({ n: '*' }).first(),
    ]);
    const total = Number((counted as { n: unknown }).n);
    return { data, pagination: { limit, offset, count: data.length, total, has_more: offset + data.length < total } };
  }

  after(id: string, afterSeq: number): Promise<LoggedLine<S>[]> {
    return this.db(this.table)
      .where({ [this.key]: id })
      .andWhere('seq', '>', afterSeq)
      .orderBy('seq')
      .limit(STREAM_BATCH)
      .select('seq', 'stream', 'line', 'at');
  }
}
