import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { paginate, type ListQuery, type Page } from '../../core/http/lists.ts';
import { COORDINATION_KEY_PREFIX, type MessageKind } from '../../core/ports/threads.ts';

export type AuthorType = 'user' | 'service_account' | 'job' | 'system';

export interface ThreadRow {
  id: string;
  project_id: string;
  key: string | null;
  title: string | null;
  job_id: string | null;
  created_by_type: AuthorType;
  created_by: string | null;
  message_count: number;
  last_message_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface MessageRow {
  id: string;
  thread_id: string;
  seq: number;
  kind: MessageKind;
  body: string;
  author_type: AuthorType;
  author_id: string | null;
  job_id: string | null;
  reply_to: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
}

export const isCoordination = (t: Pick<ThreadRow, 'key'>) => t.key?.startsWith(COORDINATION_KEY_PREFIX) ?? false;
export const toThread = (r: ThreadRow) => ({ ...r, coordination: isCoordination(r) });
export type Thread = ReturnType<typeof toThread>;

export type NewThread = Pick<ThreadRow, 'project_id' | 'key' | 'title' | 'job_id' | 'created_by_type' | 'created_by'>;

export type NewMessage = Pick<MessageRow, 'kind' | 'body' | 'author_type' | 'author_id' | 'job_id' | 'reply_to' | 'metadata'>;

export interface MessageFilters {
  limit: number;
  offset: number;
  after: number;
  kind?: MessageKind;
}

@injectable()
export class ThreadRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  list(projectId: string, query: Pick<ListQuery, 'limit' | 'offset'> & { key?: string; job_id?: string }): Promise<Page<Thread>> {
    const q = this.db('threads').where('threads.project_id', projectId);
    if (query.key !== undefined) q.where('threads.key', query.key);
    if (query.job_id !== undefined) q.where('threads.job_id', query.job_id);
    return paginate<ThreadRow, Thread>(q, query, toThread, 'threads');
  }

  byId(projectId: string, id: string, trx: Db = this.db): Promise<ThreadRow | undefined> {
    return trx('threads').where({ id, project_id: projectId }).first();
  }

  /** By id alone: the org-level routes find the thread's project from it. */
  anyProject(id: string): Promise<ThreadRow | undefined> {
    return this.db('threads').where({ id }).first();
  }

  byKey(projectId: string, key: string, trx: Db = this.db): Promise<ThreadRow | undefined> {
    return trx('threads').where({ project_id: projectId, key }).first();
  }

  /** The new thread, or null when its key is taken in the project (the caller reads that one). */
  async insert(thread: NewThread, trx: Db = this.db): Promise<ThreadRow | null> {
    const rows: ThreadRow[] = await trx('threads')
      .insert({ id: newId('thr'), ...thread })
      .onConflict(['project_id', 'key'])
      .ignore()
      .returning('*');
    return rows[0] ?? null;
  }

  /**
   * Appends a message: the thread's row lock hands out the next seq, so concurrent posters get
   * 1, 2, 3 … with no gaps or repeats, in commit order.
   */
  async append(threadId: string, message: NewMessage, trx: Db): Promise<MessageRow> {
    const [thread] = await trx('threads')
      .where({ id: threadId })
      .update({ message_count: trx.raw('message_count + 1'), last_message_at: trx.fn.now(), updated_at: trx.fn.now() })
      .returning(['message_count']);
    const [row] = await trx('thread_messages')
      .insert({ id: newId('msg'), thread_id: threadId, seq: thread.message_count, ...message, metadata: JSON.stringify(message.metadata) })
      .returning('*');
    return row;
  }

  message(threadId: string, id: string, trx: Db = this.db): Promise<MessageRow | undefined> {
    return trx('thread_messages').where({ thread_id: threadId, id }).first();
  }

  /** Messages after the `after` seq, oldest first, `limit` from `offset`, with the total after `after`. */
  async messages(threadId: string, { limit, offset, after, kind }: MessageFilters): Promise<Page<MessageRow>> {
    const q = this.db('thread_messages').where({ thread_id: threadId }).andWhere('seq', '>', after);
    if (kind) q.where({ kind });
    const [data, counted] = await Promise.all([q.clone().orderBy('seq').limit(limit).offset(offset), q.clone().count({ n: '*' }).first()]);
    const total = Number((counted as { n: unknown }).n);
    return { data, pagination: { limit, offset, count: data.length, total, has_more: offset + data.length < total } };
  }

  /** The last `limit` messages, oldest first. */
  async latest(threadId: string, limit: number): Promise<MessageRow[]> {
    const rows: MessageRow[] = await this.db('thread_messages').where({ thread_id: threadId }).orderBy('seq', 'desc').limit(limit);
    return rows.reverse();
  }

  /** Questions of the thread that no message replies to, oldest first. */
  openQuestions(threadId: string): Promise<MessageRow[]> {
    return this.db('thread_messages as q')
      .where({ 'q.thread_id': threadId, 'q.kind': 'question' })
      .whereNotExists((r) => r.select(this.db.raw('1')).from('thread_messages as r').whereRaw('r.reply_to = q.id'))
      .orderBy('q.seq')
      .select('q.*');
  }
}
