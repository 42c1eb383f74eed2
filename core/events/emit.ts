import type { Db } from '../db/knex.ts';
import { newId } from '../ids.ts';

/** Where an event comes from (the spec's sources). `system` and `runner` are the platform's own. */
export type EventSource = 'vcshost' | 'chatapp' | 'cron' | 'manual' | 'app' | 'system' | 'runner' | 'chat';

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
  dedupe_key?: string | null;
}

/**
 * Records an event on the spine as pending, in the caller's transaction, so it exists exactly when
 * what caused it does. Returns its id. The orchestrator routes pending events to triggers.
 */
export async function emitEvent(trx: Db, event: NewEvent): Promise<string> {
  const id = newId('evt');
  const { payload, ...fields } = event;
  await trx('events').insert({ id, ...fields, payload_json: JSON.stringify(payload), status: 'pending' });
  return id;
}
