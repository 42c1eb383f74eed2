/**
 * `svc/client`: a typed client of svc's REST API, over `fetch`, typed from the OpenAPI document
 * (client/generated/openapi.ts). A call names a method and a path template as the document
 * writes them, and gets the answer's type:
 *
 *   const svc = createClient({ baseUrl: 'https://svc.example.com', token });
 *   const job = await svc.POST('/projects/{project_id}/jobs', { params: { project_id }, body: { description } });
 *
 * A non-2xx answer throws a SvcApiError (status, the body's `error` as code, its message); a
 * request that got no answer, or an answer that is not JSON, throws a SvcTransportError. Server-sent
 * event streams and file downloads are not JSON calls: read them with `fetch` and `url()`.
 */
import type { InitArgs, Method, OperationOf, PathsOf, QueryInput, RequestInit, ResponseOf } from './types.ts';

export type * from './types.ts';

export interface ClientOptions {
  /** The API's base URL, which may carry a path prefix (`https://host/svc`). */
  baseUrl: string;
  /** A bearer token, or a function giving the one to send (or none) per request. */
  token?: string | (() => string | undefined);
  /** Per-request timeout; none when unset. */
  timeoutMs?: number;
  /** Extra headers on every request (the console's CSRF header). */
  headers?: Record<string, string>;
  /** `fetch`'s credentials mode (the console sends its session cookie: 'same-origin'). */
  credentials?: RequestCredentials;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /** What a failed call throws instead of its SvcApiError or SvcTransportError (a program's own error types). */
  mapError?: (error: SvcApiError | SvcTransportError) => unknown;
}

/** The server answered with a status outside 2xx. */
export class SvcApiError extends Error {
  constructor(
    readonly status: number,
    /** The body's `error` (`Not Found`, `Conflict`), or the status text. */
    readonly code: string,
    message: string,
    /** The parsed body, when it was JSON; its extra fields are the error's details. */
    readonly body: unknown,
  ) {
    super(message);
    this.name = 'SvcApiError';
  }
}

/** No answer (unreachable, timed out), or a successful answer that is not JSON. */
export class SvcTransportError extends Error {
  constructor(
    readonly reason: 'unreachable' | 'timeout' | 'not-json',
    readonly method: Method,
    readonly url: URL,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SvcTransportError';
  }
}

type Call<M extends Method> = <P extends PathsOf<M>>(path: P, ...init: InitArgs<OperationOf<M, P>>) => Promise<ResponseOf<OperationOf<M, P>>>;

export interface SvcClient {
  GET: Call<'GET'>;
  POST: Call<'POST'>;
  PUT: Call<'PUT'>;
  PATCH: Call<'PATCH'>;
  DELETE: Call<'DELETE'>;
  /** Any method by name: `request('GET', '/jobs/{job_id}', …)`. */
  request<M extends Method, P extends PathsOf<M>>(method: M, path: P, ...init: InitArgs<OperationOf<M, P>>): Promise<ResponseOf<OperationOf<M, P>>>;
  /** The URL a call would request, for what is not a JSON call (event streams, downloads). */
  url(path: string, params?: Record<string, string | number>, query?: Record<string, unknown>): URL;
}

/** The request URL under the base: each `{name}` of the template replaced by its escaped value, the defined query values appended. */
export function requestUrl(baseUrl: string, template: string, params: Record<string, string | number> = {}, query: Record<string, unknown> = {}): URL {
  const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new TypeError(`${template}: no value for {${name}}`);
    return encodeURIComponent(String(value));
  });
  const url = new URL(baseUrl.replace(/\/+$/, '') + path);
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
  }
  return url;
}

/** The server's `message`, else its `error`, else the raw text (when short) or the status line. */
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

export function createClient(options: ClientOptions): SvcClient {
  const send = async (method: Method, template: string, init: RequestInit<unknown> & { query?: QueryInput<object> } = {}): Promise<unknown> => {
    const url = requestUrl(options.baseUrl, template, init.params as Record<string, string> | undefined, init.query);
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    const body = (init as { body?: unknown }).body;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const token = typeof options.token === 'function' ? options.token() : options.token;
    if (token) headers.authorization = `Bearer ${token}`;
    const timeoutMs = init.timeoutMs ?? options.timeoutMs;

    let response: Response;
    try {
      response = await (options.fetch ?? fetch)(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: options.credentials,
        signal: timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const timedOut = (error as { name?: string }).name === 'TimeoutError';
      const detail = timedOut ? `timed out after ${(timeoutMs ?? 0) / 1000}s` : describeFailure(error);
      throw new SvcTransportError(timedOut ? 'timeout' : 'unreachable', method, url, `${method} ${url.href}: ${detail}`, { cause: error });
    }

    const text = await response.text();
    let parsed: unknown;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    if (!response.ok) {
      const code =
        parsed && typeof parsed === 'object' && typeof (parsed as { error?: unknown }).error === 'string'
          ? (parsed as { error: string }).error
          : response.statusText;
      throw new SvcApiError(response.status, code, errorMessage(parsed, text, response.statusText), parsed);
    }
    if (text !== '' && parsed === undefined) {
      throw new SvcTransportError('not-json', method, url, `${method} ${url.href} returned a non-JSON body (HTTP ${response.status})`);
    }
    return parsed;
  };
  const { mapError } = options;
  const sent = (method: Method, path: string, init?: object): Promise<never> => {
    const answer = send(method, path, init) as Promise<never>;
    return mapError ? answer.catch((error: SvcApiError | SvcTransportError) => Promise.reject(mapError(error))) : answer;
  };
  const call =
    (method: Method) =>
    (path: string, init?: object): Promise<never> =>
      sent(method, path, init);
  return {
    GET: call('GET'),
    POST: call('POST'),
    PUT: call('PUT'),
    PATCH: call('PATCH'),
    DELETE: call('DELETE'),
    request: (method: Method, path: string, init?: object) => sent(method, path, init),
    url: (path, params, query) => requestUrl(options.baseUrl, path, params, query),
  };
}

function describeFailure(error: unknown): string {
  const err = error as { message?: string; cause?: { code?: string; message?: string } };
  return err.cause?.message || err.cause?.code || err.message || String(error);
}
