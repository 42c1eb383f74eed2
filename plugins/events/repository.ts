import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { paginate, type ListQuery, type Page } from '../../core/http/lists.ts';
import type { EventSource } from '../../core/events/emit.ts';
import type { EventStatus } from '../../core/events/schema.ts';
import type { LoggedEvent } from '../../core/ports/events.ts';
import type { Decision } from './matcher.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';

/** What the router did with an event: the manifest it read, and every trigger's decision (with what a match started). */
export interface Routing {
  manifest_hash: string | null;
  routed_at: string;
  matched: (Extract<Decision, { matched: true }> & { run_id?: string; job_id?: string; error?: string })[];
  not_matched: Extract<Decision, { matched: false }>[];
}

/** A row of the events table: the fields the spine records (what others read through the EventLog), and this domain's. */
export interface EventRow extends LoggedEvent {
  mutation_id: string | null;
  request_id: string | null;
  routing: Routing | null;
  error: string | null;
  claimed_at: Date | null;
  attempts: number;
  updated_at: Date;
}

/** The Event as the API shows it (the claim bookkeeping stays inside). */
export function toEvent(row: EventRow) {
  const { claimed_at: _c, attempts: _a, ...event } = row;
  return event;
}
export type Event = ReturnType<typeof toEvent>;

export interface EventFilters extends ListQuery {
  type?: string;
  source?: EventSource;
  status?: EventStatus;
}

@injectable()
export class EventRepository {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
  ) {}

  byId(id: string, db: Db = this.db): Promise<EventRow | undefined> {
    return db('events').where({ id }).first();
  }

  /** One page of a project's events, or (with `orgId`) of every project of the org; newest first. */
  async list(scope: { projectId: string } | { orgId: string }, f: EventFilters): Promise<Page<Event>> {
    const q = this.db('events');
    if ('projectId' in scope) q.where('events.project_id', scope.projectId);
    else q.whereIn('events.project_id', await this.projects.idsInOrg(scope.orgId));
    for (const key of ['type', 'source', 'status'] as const) if (f[key] !== undefined) q.where(`events.${key}`, f[key]);
    return paginate<EventRow, Event>(q, f, toEvent, 'events');
  }

  /** Claims up to `limit` pending events, oldest first, skipping rows other routers hold: safe with any number of them. */
  async claim(limit: number): Promise<EventRow[]> {
    const { rows } = await this.db.raw<{ rows: EventRow[] }>(
      `UPDATE events e SET status = 'processing', claimed_at = now(), attempts = e.attempts + 1, updated_at = now()
       FROM (SELECT id FROM events WHERE status = 'pending' ORDER BY created_at, id LIMIT ? FOR UPDATE SKIP LOCKED) picked
       WHERE e.id = picked.id
       RETURNING e.*`,
      [limit],
    );
    return rows.sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || a.id.localeCompare(b.id));
  }

  /** Ends a claim; false when the claim was lost meanwhile (the event was recovered and claimed again). */
  async finish(event: Pick<EventRow, 'id' | 'attempts'>, status: 'completed' | 'failed', routing: Routing | null, error: string | null): Promise<boolean> {
    const updated = await this.db('events')
      .where({ id: event.id, status: 'processing', attempts: event.attempts })
      .update({ status, routing: routing === null ? null : JSON.stringify(routing), error, updated_at: this.db.fn.now() });
    return updated > 0;
  }

  /**
   * Events claimed more than `staleSeconds` ago and still processing (their router died or hung):
   * back to pending, or failed once they have been claimed `maxAttempts` times.
   */
  async recoverStuck(staleSeconds: number, maxAttempts: number): Promise<{ requeued: number; failed: number }> {
    const stale = this.db('events')
      .where('status', 'processing')
      .andWhere('claimed_at', '<', this.db.raw('now() - make_interval(secs => ?)', [staleSeconds]));
    const failed = await stale
      .clone()
      .where('attempts', '>=', maxAttempts)
      .update({
        status: 'failed',
        error: `routing did not finish after ${maxAttempts} claims`,
        updated_at: this.db.fn.now(),
      });
    const requeued = await stale.clone().where('attempts', '<', maxAttempts).update({ status: 'pending', claimed_at: null, updated_at: this.db.fn.now() });
    return { requeued, failed };
  }
}
