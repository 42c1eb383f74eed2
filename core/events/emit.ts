import type { Db } from '../db/knex.ts';
import { newId } from '../ids.ts';
import { eventRoutingOf, eventWakeupsOf } from './wakeups.ts';

/** Where an event comes from (the spec's sources). `system` and `runner` are the platform's own. */
export type EventSource = 'vcshost' | 'chatapp' | 'cron' | 'manual' | 'app' | 'system' | 'runner' | 'chat';
export const EVENT_SOURCES: readonly EventSource[] = ['vcshost', 'chatapp', 'cron', 'manual', 'app', 'system', 'runner', 'chat'];

export interface NewEvent {
  project_id: string;
  type: string;
  source: EventSource;
  payload: Record<string, unknown>;
  env_name?: string | null;
  ref_sha?: string | null;
  ref_branch?: string | null;
  actor_type?: 'user' | 'system' | 'app' | null;
  actor_id?: string | null;
  /** An event with a key already seen in the project is not created again. */
  dedupe_key?: string | null;
  mutation_id?: string | null;
  request_id?: string | null;
}

/**
 * Records an event on the spine as pending, in the caller's transaction, so it exists exactly when
 * what caused it does. With a `dedupe_key` the project already has, nothing is written and the
 * earlier event's id comes back with `created: false`. A new event is queued for routing in the
 * same transaction (a work item of the events plugin's queue, when it is loaded) and wakes the
 * event's other readers (webhooks) once the caller's transaction commits.
 */
export async function emitEvent(trx: Db, event: NewEvent): Promise<{ id: string; created: boolean }> {
  const { payload, ...fields } = event;
  const [row] = await trx('events')
    .insert({ id: newId('evt'), ...fields, payload_json: JSON.stringify(payload), status: 'pending' })
    .onConflict(trx.raw('(project_id, dedupe_key) WHERE dedupe_key IS NOT NULL'))
    .ignore()
    .returning('id');
  if (row) {
    await eventRoutingOf(trx)?.(row.id, trx);
    eventWakeupsOf(trx)?.afterCommit(trx);
    return { id: row.id, created: true };
  }
  const existing = await trx('events').where({ project_id: event.project_id, dedupe_key: event.dedupe_key }).first('id');
  return { id: existing.id, created: false };
}
