import type { InjectionToken } from 'tsyringe';
import type { Db } from '../db/knex.ts';
import type { EventSource } from '../events/emit.ts';
import type { EventStatus } from '../events/schema.ts';
import { declareSlot, PortSlot, type Registrar } from './slot.ts';

/** An event as the spine recorded it: what other domains may read of the events table. */
export interface LoggedEvent {
  id: string;
  project_id: string;
  type: string;
  source: EventSource;
  status: EventStatus;
  payload_json: Record<string, unknown>;
  env_name: string | null;
  ref_sha: string | null;
  ref_branch: string | null;
  actor_type: 'user' | 'system' | 'app' | null;
  actor_id: string | null;
  dedupe_key: string | null;
  created_at: Date;
}

/** A window of the event log: events at or after `from` (an event id), after `after` when given, up to `to`. */
export interface EventWindow {
  projectIds: string[];
  from: string;
  after: string | null;
  to: Date;
  limit: number;
}

/**
 * The event log, for domains that deliver or show events they did not record (webhooks,
 * integrations). The events plugin owns the table and fills this port; every method takes an
 * optional transaction to read in.
 */
export interface EventLog {
  byId(id: string, db?: Db): Promise<LoggedEvent | undefined>;
  /** Those of the ids that exist, in no particular order. */
  byIds(ids: string[], db?: Db): Promise<LoggedEvent[]>;
  /**
   * The window's events in event order (time, then id), at most `limit`. Positions are compared in
   * SQL at the database's precision; an unknown `from` or `after` event gives an empty window.
   */
  window(window: EventWindow, db?: Db): Promise<LoggedEvent[]>;
}

export const EventLogToken = Symbol('EventLog') as InjectionToken<EventLog>;
export const EventLogSlotToken = Symbol('EventLogSlot') as InjectionToken<PortSlot<EventLog>>;

/** The kernel's part: the slot the events plugin fills. */
export function declareEventLog(container: Registrar): void {
  declareSlot(container, EventLogSlotToken, EventLogToken, new PortSlot<EventLog>('events', 'event log'));
}
