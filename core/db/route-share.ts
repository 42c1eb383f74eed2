import { AsyncLocalStorage } from 'node:async_hooks';
import type { Db } from './knex.ts';

/** The route (method and path template) of the request whose work is running, if any. */
export const requestRoute = new AsyncLocalStorage<string>();

/** One route waited longer than the pool allows for its share of the connections (answers 503, as a full pool does). */
export class RouteShareTimeout extends Error {
  constructor(route: string, waitedMs: number) {
    super(`${route} already holds its share of the database connections; none came free within ${waitedMs} ms`);
    this.name = 'RouteShareTimeout';
  }
}

/** Each route may hold all but a fifth of the pool (at least one connection kept for the others, when there are two). */
export const routeShare = (poolMax: number) => Math.max(1, poolMax - Math.max(1, Math.ceil(poolMax / 5)));

interface PoolClient {
  acquireConnection(): Promise<object>;
  releaseConnection(connection: object): Promise<void>;
}

/**
 * A bulkhead over a knex pool: the statements of one route's requests hold at most `share`
 * connections at once, so requests piling up on one stalled table (a lock held elsewhere) leave
 * the rest of the pool to routes that do not touch it. Work outside a request (no route) is not
 * counted. A request over its route's share waits for one of the route's own connections to come
 * back, at most `waitMs`.
 */
export function shareConnectionsByRoute(db: Db, share: number, waitMs: number): void {
  const client = db.client as unknown as PoolClient;
  const acquire = client.acquireConnection.bind(client);
  const release = client.releaseConnection.bind(client);
  const held = new Map<string, number>();
  const waiting = new Map<string, (() => void)[]>();
  const holder = new WeakMap<object, string>();

  const leave = (route: string) => {
    const next = waiting.get(route)?.shift();
    if (next) return next(); // the slot passes straight to the next waiter
    const n = (held.get(route) ?? 1) - 1;
    if (n === 0) held.delete(route);
    else held.set(route, n);
  };
  const enter = (route: string): Promise<void> => {
    const n = held.get(route) ?? 0;
    if (n < share) {
      held.set(route, n + 1);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const queue = waiting.get(route) ?? [];
      waiting.set(route, queue);
      const timer = setTimeout(() => {
        queue.splice(queue.indexOf(turn), 1);
        if (queue.length === 0) waiting.delete(route);
        reject(new RouteShareTimeout(route, waitMs));
      }, waitMs);
      const turn = () => {
        clearTimeout(timer);
        if (queue.length === 0) waiting.delete(route);
        resolve();
      };
      queue.push(turn);
    });
  };

  client.acquireConnection = async () => {
    const route = requestRoute.getStore();
    if (route === undefined) return acquire();
    await enter(route);
    try {
      const connection = await acquire();
      holder.set(connection, route);
      return connection;
    } catch (err) {
      leave(route);
      throw err;
    }
  };
  client.releaseConnection = (connection: object) => {
    const route = holder.get(connection);
    if (route !== undefined) {
      holder.delete(connection);
      leave(route);
    }
    return release(connection);
  };
}
