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
  updated_at: Date;
}

/** The Event as the API shows it. */
export function toEvent(row: EventRow) {
  return row;
}
export type Event = ReturnType<typeof toEvent>;

/** How an event's routing ended. */
export interface RoutingEnd {
  id: string;
  status: 'completed' | 'failed';
  routing: Routing | null;
  error: string | null;
}

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

  /** Of the events `ids`, those still to route (pending), in no set order. */
  pending(ids: string[]): Promise<EventRow[]> {
    return this.db('events').whereIn('id', ids).where('status', 'pending');
  }

  /** Pending events stored more than `seconds` ago, oldest first. */
  pendingSince(seconds: number, limit: number): Promise<string[]> {
    return this.db('events')
      .where('status', 'pending')
      .where('created_at', '<', this.db.raw('now() - make_interval(secs => ?)', [seconds]))
      .orderBy('created_at')
      .limit(limit)
      .pluck('id');
  }

  /** Records many routings in `trx` with one statement (the router fenced them: their work items' leases). */
  async finish(trx: Db, ends: RoutingEnd[]): Promise<void> {
    if (ends.length === 0) return;
    await trx.raw(
      `UPDATE events e SET status = r.status, routing = r.routing, error = r.error, updated_at = now()
       FROM jsonb_to_recordset(?::jsonb) AS r(id text, status text, routing jsonb, error text)
       WHERE e.id = r.id AND e.status = 'pending'`,
      [JSON.stringify(ends)],
    );
  }
}
