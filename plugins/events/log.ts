import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { EventLog, EventWindow, LoggedEvent } from '../../core/ports/events.ts';

/** The columns of a LoggedEvent (the claim bookkeeping and the routing stay in this domain). */
const LOGGED_FIELDS = [
  'id',
  'project_id',
  'type',
  'source',
  'status',
  'payload_json',
  'env_name',
  'ref_sha',
  'ref_branch',
  'actor_type',
  'actor_id',
  'dedupe_key',
  'created_at',
];

/** The EventLog port: what other domains read of the events table. */
@injectable()
export class EventLogReader implements EventLog {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  byId(id: string, db: Db = this.db): Promise<LoggedEvent | undefined> {
    return db('events').where({ id }).first(LOGGED_FIELDS);
  }

  byIds(ids: string[], db: Db = this.db): Promise<LoggedEvent[]> {
    return ids.length === 0 ? Promise.resolve([]) : db('events').whereIn('id', ids).select(LOGGED_FIELDS);
  }

  window({ projectIds, from, after, to, limit }: EventWindow, db: Db = this.db): Promise<LoggedEvent[]> {
    const q = db('events')
      .whereIn('project_id', projectIds)
      .whereRaw('(created_at, id) >= (SELECT created_at, id FROM events WHERE id = ?)', [from])
      .where('created_at', '<=', to)
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .limit(limit)
      .select(LOGGED_FIELDS);
    if (after !== null) q.whereRaw('(created_at, id) > (SELECT created_at, id FROM events WHERE id = ?)', [after]);
    return q;
  }
}
