import { createClient, errorMessage, SvcApiError, SvcTransportError, type SvcClient } from '../client/index.ts';
import { isExpired, type Context } from './config.ts';
import { ApiError, CliError } from './errors.ts';

export { errorMessage };

export type Query = Record<string, string | number | boolean | undefined>;

const TIMEOUT_MS = 60_000;

/** One path segment, escaped: `/orgs/${seg(id)}` (for the event streams and downloads, which are not JSON calls). */
export const seg = (value: string): string => encodeURIComponent(value);

/** Build the request URL under the API base (which may itself carry a path prefix). */
export function apiUrlFor(base: string, path: string, query?: Query): URL {
  const url = new URL(base + path);
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined) url.searchParams.set(key, String(value));
  }
  return url;
}

/**
 * The API as `svc/client` types it, with the profile's bearer token and the CLI's errors: an error
 * answer throws ApiError (with a hint on a 401), no answer or a non-JSON one throws CliError.
 */
export const api = (ctx: Context): SvcClient => cliClient(ctx, true);

/** The same, sending no token (bootstrap, sign-in, access requests). */
export const publicApi = (ctx: Context): SvcClient => cliClient(ctx, false);

function cliClient(ctx: Context, auth: boolean): SvcClient {
  return createClient({
    baseUrl: ctx.apiUrl,
    token: auth ? ctx.token : undefined,
    timeoutMs: TIMEOUT_MS,
    mapError: (error) => cliError(ctx, auth, error),
  });
}

function cliError(ctx: Context, auth: boolean, error: unknown): unknown {
  if (error instanceof SvcApiError) {
    return new ApiError(error.status, error.message, error.body, error.status === 401 && auth ? unauthorizedHint(ctx) : undefined);
  }
  if (!(error instanceof SvcTransportError)) return error;
  const { method, url } = error;
  if (error.reason === 'not-json') return new CliError(error.message);
  if (error.reason === 'timeout')
    return new CliError(`request to ${ctx.apiUrl} timed out after ${TIMEOUT_MS / 1000}s (${method} ${url.pathname})`, NETWORK_HINT);
  const cause = error.cause as { message?: string; cause?: { code?: string; message?: string } } | undefined;
  const detail = cause?.cause?.message || cause?.cause?.code || cause?.message || String(cause);
  return new CliError(`cannot reach the svc API at ${ctx.apiUrl} (${method} ${url.pathname}): ${detail}`, NETWORK_HINT);
}

const NETWORK_HINT = 'check --api-url / SVC_API_URL and that the server is running';

/** An extra line for a 401, saying why the request was probably unauthenticated. */
export function unauthorizedHint(ctx: Context): string {
  if (!ctx.token) return `not logged in to ${ctx.apiUrl}; run \`svc auth login --email EMAIL\``;
  if (ctx.tokenSource === 'env') return 'the token in SVC_TOKEN was rejected';
  if (isExpired(ctx.credential)) {
    return `the stored token for ${ctx.apiUrl} expired at ${ctx.credential?.expires_at}; run \`svc auth login --email EMAIL\``;
  }
  return `the stored token for ${ctx.apiUrl} was rejected; run \`svc auth login --email EMAIL\``;
}
