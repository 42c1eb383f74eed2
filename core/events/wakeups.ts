import type { Db } from '../db/knex.ts';
import type { Notifier } from '../db/notify.ts';

/** The channel event routers LISTEN on: a pending event was committed. */
export const EVENTS_CHANNEL = 'svc_events';

// Keyed by the knex config object, which a knex instance shares with every transaction it opens
// (their client objects differ), so emitEvent finds the notifier from whatever `trx` it is given.
const notifiers = new WeakMap<object, Notifier>();
const keyOf = (db: Db): object => db.client.config;

/** From now on, events emitted on `db` or its transactions wake routers through `notifier` once committed. */
export function attachEventWakeups(db: Db, notifier: Notifier): void {
  notifiers.set(keyOf(db), notifier);
}

/** The notifier attached to `db`'s knex instance; none when no event router is loaded. */
export function eventWakeupsOf(db: Db): Notifier | undefined {
  return notifiers.get(keyOf(db));
}

/** Queues an event for routing in the transaction that stored it (the events plugin's work queue). */
export type EventRouting = (eventId: string, trx: Db) => Promise<unknown>;
const routings = new WeakMap<object, EventRouting>();

/** From now on, events emitted on `db` or its transactions are queued for routing through `route`. */
export function attachEventRouting(db: Db, route: EventRouting): void {
  routings.set(keyOf(db), route);
}

/** The routing attached to `db`'s knex instance; none when no event router is loaded. */
export function eventRoutingOf(db: Db): EventRouting | undefined {
  return routings.get(keyOf(db));
}
