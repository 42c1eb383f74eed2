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
  if (name === 'KnexTimeoutError') return true;
  return /^Connection terminated|connection error and is not queryable|Client was closed and is not queryable|Connection lost/i.test(err.message);
}
