import { isExpired, type Context } from './config.ts';
import { ApiError, CliError } from './errors.ts';

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  body?: unknown;
  query?: Query;
  /** Send the bearer token (default true). Bootstrap and login endpoints are anonymous. */
  auth?: boolean;
}

const TIMEOUT_MS = 60_000;

/** One path segment, escaped: `/orgs/${seg(id)}`. */
export const seg = (value: string): string => encodeURIComponent(value);

/** Build the request URL under the API base (which may itself carry a path prefix). */
export function apiUrlFor(base: string, path: string, query?: Query): URL {
  const url = new URL(base + path);
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined) url.searchParams.set(key, String(value));
  }
  return url;
}

/** Call the API and return its parsed JSON body (undefined for 204); throws ApiError or CliError. */
export async function apiRequest<T = unknown>(ctx: Context, method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const url = apiUrlFor(ctx.apiUrl, path, options.query);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.auth !== false && ctx.token) headers.authorization = `Bearer ${ctx.token}`;

  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (error) {
    throw new CliError(networkMessage(ctx.apiUrl, method, url, error), 'check --api-url / SVC_API_URL and that the server is running');
  }

  const text = await response.text();
  let body: unknown;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  }
  if (!response.ok) {
    const hint = response.status === 401 && options.auth !== false ? unauthorizedHint(ctx) : undefined;
    throw new ApiError(response.status, errorMessage(body, text, response.statusText), body, hint);
  }
  if (text !== '' && body === undefined) {
    throw new CliError(`${method} ${url.href} returned a non-JSON body (HTTP ${response.status})`);
  }
  return body as T;
}

function networkMessage(base: string, method: string, url: URL, error: unknown): string {
  const err = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err.name === 'TimeoutError') return `request to ${base} timed out after ${TIMEOUT_MS / 1000}s (${method} ${url.pathname})`;
  const detail = err.cause?.message || err.cause?.code || err.message || String(error);
  return `cannot reach the svc API at ${base} (${method} ${url.pathname}): ${detail}`;
}

/** The server's `message`, else its `error`, else the raw text or status line. */
export function errorMessage(body: unknown, text: string, statusText: string): string {
  if (body && typeof body === 'object') {
    const { message, error } = body as { message?: unknown; error?: unknown };
    if (typeof message === 'string' && message !== '') return message;
    if (typeof error === 'string' && error !== '') return error;
  }
  const trimmed = text.trim();
  if (trimmed !== '' && trimmed.length <= 300) return trimmed;
  return statusText || 'request failed';
}

/** An extra line for a 401, saying why the request was probably unauthenticated. */
export function unauthorizedHint(ctx: Context): string {
  if (!ctx.token) return `not logged in to ${ctx.apiUrl}; run \`svc auth login --email EMAIL\``;
  if (ctx.tokenSource === 'env') return 'the token in SVC_TOKEN was rejected';
  if (isExpired(ctx.credential)) {
    return `the stored token for ${ctx.apiUrl} expired at ${ctx.credential?.expires_at}; run \`svc auth login --email EMAIL\``;
  }
  return `the stored token for ${ctx.apiUrl} was rejected; run \`svc auth login --email EMAIL\``;
}
