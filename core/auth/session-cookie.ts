import type { Server } from '@hapi/hapi';

/**
 * The web console's session: the caller's bearer token in an `HttpOnly; SameSite=Strict` cookie
 * (set and cleared by the console plugin's session routes), read by the auth scheme when no
 * Authorization header came. Script on the page never sees the token.
 */
export const SESSION_COOKIE = 'svc_session';

/**
 * A write authenticated by the cookie must carry this header (any value). A page on another origin
 * cannot add a custom header to a request without a CORS preflight, which svc never grants, so a
 * forged form or cross-site fetch is refused even where SameSite is not honoured.
 */
export const CSRF_HEADER = 'x-svc-csrf';

const SAFE_METHODS = new Set(['get', 'head', 'options']);

/** Whether a cookie-authenticated request of this method lacks the CSRF header it needs. */
export function lacksCsrfHeader(method: string, headers: Record<string, unknown>): boolean {
  return !SAFE_METHODS.has(method.toLowerCase()) && !headers[CSRF_HEADER];
}

/** Declares the cookie: a token as is, never parsed as JSON; a malformed value is ignored, not a 400. */
export function declareSessionCookie(server: Server, secure: boolean): void {
  server.state(SESSION_COOKIE, {
    isHttpOnly: true,
    isSameSite: 'Strict',
    isSecure: secure,
    path: '/',
    encoding: 'none',
    strictHeader: true,
    ignoreErrors: true,
    clearInvalid: true,
  });
}
