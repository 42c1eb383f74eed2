import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgendaBackend } from 'agenda';
import { MongoBackend } from '@agendajs/mongo-backend';
import { MongoClient, MongoServerError, type Collection } from 'mongodb';

/** How long a lock holder that died keeps others out, and how often a waiter tries again. */
const LOCK_LEASE_MS = 30_000;
const LOCK_RETRY_MS = 50;
const DUPLICATE_KEY = 11000;

interface LockDocument {
  _id: string;
  owner: string;
  expires_at: Date;
}

export interface MongoStorage {
  backend: AgendaBackend;
  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * Agenda's jobs in MongoDB (`<collection>`, logs in `<collection>_logs`), and a lock across
 * replicas in `<collection>_locks`: a document per key with its owner and a lease, taken by an
 * upsert that only matches a free or expired lock (a held one makes the upsert collide on _id).
 * The lease bounds how long a replica that died inside the section keeps the others waiting.
 */
export async function mongoStorage(url: string, collection: string, connectTimeoutMs: number): Promise<MongoStorage> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: connectTimeoutMs });
  try {
    await client.connect();
  } catch (err) {
    await client.close().catch(() => {});
    throw new Error(`scheduler 'agenda': MongoDB at ${redacted(url)} did not answer within ${connectTimeoutMs} ms: ${(err as Error).message}`);
  }
  try {
    const db = client.db();
    const inner = new MongoBackend({ mongo: db, collection, logCollection: `${collection}_logs` });
    await inner.connect();
    const locks = db.collection<LockDocument>(`${collection}_locks`);
    return {
      backend: inner,
      exclusive: (key, fn) => withLock(locks, key, fn),
      close: async () => {
        await inner.disconnect();
        await client.close();
      },
    };
  } catch (err) {
    await client.close().catch(() => {});
    throw err;
  }
}

/** The URL without its password, for messages. */
function redacted(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'the configured URL';
  }
}

async function withLock<T>(locks: Collection<LockDocument>, key: string, fn: () => Promise<T>): Promise<T> {
  const owner = randomUUID();
  for (;;) {
    const now = new Date();
    try {
      await locks.updateOne(
        { _id: key, $or: [{ expires_at: { $lt: now } }, { owner }] },
        { $set: { owner, expires_at: new Date(now.getTime() + LOCK_LEASE_MS) } },
        { upsert: true },
      );
      break;
    } catch (err) {
      if (!(err instanceof MongoServerError && err.code === DUPLICATE_KEY)) throw err;
      await sleep(LOCK_RETRY_MS); // held by another replica
    }
  }
  try {
    return await fn();
  } finally {
    await locks.deleteOne({ _id: key, owner });
  }
}
