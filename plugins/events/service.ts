import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { emitEvent, type EventSource, type NewEvent } from '../../core/events/emit.ts';
import { EventRepository, toEvent, type Event } from './repository.ts';

/** Sources and type namespaces only the platform emits. */
const PLATFORM_SOURCES: ReadonlySet<EventSource> = new Set(['runner', 'system']);
const PLATFORM_TYPE = /^(system|runner)\./;

export type EventRequest = Omit<NewEvent, 'project_id'>;

/** 403 for events only the platform may emit; said before anything is written. */
export function refusePlatformEvent(type: string, source?: EventSource): void {
  if (source && PLATFORM_SOURCES.has(source)) throw Boom.forbidden(`events from source ${source} are emitted by the platform only`);
  if (PLATFORM_TYPE.test(type)) throw Boom.forbidden(`event type ${type}: ${type.split('.')[0]}.* events are emitted by the platform only`);
}

@injectable()
export class EventService {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(EventRepository) private readonly events: EventRepository,
  ) {}

  /** Stores a pending event; with a dedupe key the project has seen, the earlier event (`created: false`). */
  async create(principal: Principal, projectId: string, request: EventRequest): Promise<{ event: Event; created: boolean }> {
    refusePlatformEvent(request.type, request.source);
    // Read back in the same transaction: a router may claim the event the moment it commits.
    return this.db.transaction(async (trx) => {
      const { id, created } = await emitEvent(trx, { ...request, project_id: projectId, actor_id: request.actor_id ?? principal.id });
      return { event: toEvent((await this.events.byId(id, trx))!), created };
    });
  }

  /** The event when it belongs to the project; else 404. */
  async get(projectId: string, eventId: string): Promise<Event> {
    const row = await this.events.byId(eventId);
    if (!row || row.project_id !== projectId) throw Boom.notFound(`event ${eventId} not found`);
    return toEvent(row);
  }
}
