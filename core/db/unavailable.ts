/**
 * Whether `err` says the database could not be reached or dropped the connection (a restart, a
 * network cut, a full connection pool), as opposed to refusing a statement. Such errors are
 * transient: callers retry, requests answer 503, and none of them may end the process.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const { code, name } = err as Error & { code?: unknown };
  if (typeof code === 'string') {
    // SQLSTATE class 08 (connection exception), admin/crash shutdown, "cannot connect now", too many connections.
    if (code.startsWith('08') || ['57P01', '57P02', '57P03', '53300'].includes(code)) return true;
    if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'].includes(code)) return true;
  }
  if (name === 'KnexTimeoutError' || name === 'RouteShareTimeout') return true;
  // knex puts the SQL in front of the driver's message.
  return /Connection terminated|connection error and is not queryable|Client was closed and is not queryable|Connection lost/i.test(err.message);
}

/**
 * Whether `err` says the database is overloaded or away rather than that the request is wrong: it
 * is unreachable, the pool had no free connection in time, a lock wait or a statement ran past its
 * timeout, or a deadlock or serialization conflict cancelled it. The same request may well succeed
 * a moment later, so it answers 503 with Retry-After, never 500.
 */
export function isDatabaseBusy(err: unknown): boolean {
  if (isDatabaseUnavailable(err)) return true;
  const code = (err as { code?: unknown } | null)?.code;
  // lock_not_available (lock_timeout), query_canceled (statement_timeout), deadlock, serialization failure
  return typeof code === 'string' && ['55P03', '57014', '40P01', '40001'].includes(code);
}
