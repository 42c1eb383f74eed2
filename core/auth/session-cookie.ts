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

/**
 * Declares the cookie: a token as is, never parsed as JSON; a malformed value is ignored, not a 400.
 * Host-only unless `domain` (auth.session_cookie_domain) names the root domain to share it with,
 * which must contain the public URL's host (a browser drops a cookie for a domain not its own).
 */
export function declareSessionCookie(server: Server, secure: boolean, domain: string | null = null, publicUrl: string | null = null): void {
  if (domain && publicUrl) {
    const host = new URL(publicUrl).hostname.toLowerCase();
    const root = domain.toLowerCase();
    if (host !== root && !host.endsWith(`.${root}`))
      throw new Error(`auth.session_cookie_domain ${domain} does not contain server.public_url's host ${host}: browsers would drop the cookie`);
  }
  server.state(SESSION_COOKIE, {
    ...(domain ? { domain } : {}),
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
