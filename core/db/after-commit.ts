import type { Knex } from 'knex';
import type { Db } from './knex.ts';

/**
 * Runs `fn` once what `db` wrote is committed: at once outside a transaction, else when the
 * outermost transaction commits (never when it rolls back).
 */
export function afterCommit(db: Db, fn: () => void): void {
  let trx = db as Knex.Transaction;
  if (!trx.isTransaction) return fn();
  while (trx.parentTransaction) trx = trx.parentTransaction;
  trx.executionPromise.then(fn, () => undefined);
}
