import { inject, injectable } from '../../core/di.ts';
import type { Db } from '../../core/db/knex.ts';
import { EventLogToken, type EventLog } from '../../core/ports/events.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import type { DeliveredEvent } from './envelope.ts';
import type { MatchableEvent } from './matching.ts';

export type WindowEvent = MatchableEvent & { id: string };
export type OrgEvent = DeliveredEvent & { project_id: string };

/** Events of a subscription's scope read per page when a replay walks its window. */
const SCAN_PAGE = 1000;

/**
 * The events webhooks send, each with its project's org: read through the events domain's
 * EventLog and the ProjectDirectory, not their tables.
 */
@injectable()
export class OrgEvents {
  constructor(
    @inject(EventLogToken) private readonly events: EventLog,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
  ) {}

  /** Those of the events that still exist, as deliveries carry them, in the order of `ids`. */
  async delivered(ids: string[], db?: Db): Promise<OrgEvent[]> {
    if (ids.length === 0) return [];
    const events = new Map((await this.events.byIds([...new Set(ids)], db)).map((e) => [e.id, e]));
    const projects = await this.projects.byIds([...new Set([...events.values()].map((e) => e.project_id))], db);
    const orgOf = new Map(projects.map((p) => [p.id, p.org_id]));
    return ids.flatMap((id) => {
      const e = events.get(id);
      const orgId = e && orgOf.get(e.project_id);
      return e && orgId ? [{ id: e.id, type: e.type, project_id: e.project_id, org_id: orgId, time: e.created_at, data: e.payload_json }] : [];
    });
  }

  /** The event's time and id when it belongs to the org (and project, when given); else undefined. */
  async inScope(db: Db, eventId: string, scope: { orgId: string; projectId: string | null }): Promise<{ id: string; created_at: Date } | undefined> {
    const event = await this.events.byId(eventId, db);
    if (!event || (scope.projectId !== null && event.project_id !== scope.projectId)) return undefined;
    const project = await this.projects.byId(event.project_id, db);
    return project?.org_id === scope.orgId ? { id: event.id, created_at: event.created_at } : undefined;
  }

  /**
   * Walks the window from `fromEvent` (inclusive) to `to` in event order, passing each page to
   * `take`, until `take` answers false.
   */
  async scan(db: Db, scope: { orgId: string; projectId: string | null }, fromEvent: string, to: Date, take: (page: WindowEvent[]) => boolean): Promise<void> {
    const projectIds = (await this.projects.idsInOrg(scope.orgId, db)).filter((id) => scope.projectId === null || id === scope.projectId);
    let after: string | null = null;
    for (;;) {
      const events = await this.events.window({ projectIds, from: fromEvent, after, to, limit: SCAN_PAGE }, db);
      const page: WindowEvent[] = events.map((e) => ({ id: e.id, type: e.type, project_id: e.project_id, payload: e.payload_json }));
      if (page.length === 0 || !take(page) || page.length < SCAN_PAGE) return;
      after = page[page.length - 1].id;
    }
  }
}
