import { HostApiError } from '../ports/integrations.ts';

export interface JsonRequest {
  url: string;
  body: unknown;
  headers: Record<string, string>;
  timeoutMs: number;
}

export interface JsonReply {
  status: number;
  /** The parsed JSON body, or the text when it is not JSON. */
  body: unknown;
}

/** POSTs JSON to a provider API. Any answer comes back (the caller judges it); no answer is a HostApiError with status 0. */
export function postJson(request: JsonRequest): Promise<JsonReply> {
  return sendJson('POST', request);
}

/** GETs JSON from a provider API, judged as postJson's answer is. */
export function getJson(request: Omit<JsonRequest, 'body'>): Promise<JsonReply> {
  return sendJson('GET', { ...request, body: undefined });
}

async function sendJson(method: 'GET' | 'POST', request: JsonRequest): Promise<JsonReply> {
  let status: number;
  let text: string;
  try {
    const res = await fetch(request.url, {
      method,
      headers: { ...(method === 'POST' ? { 'content-type': 'application/json; charset=utf-8' } : {}), accept: 'application/json', ...request.headers },
      ...(method === 'POST' ? { body: JSON.stringify(request.body) } : {}),
      signal: AbortSignal.timeout(request.timeoutMs),
      redirect: 'error',
    });
    status = res.status;
    text = await res.text();
  } catch (e) {
    const err = e as Error & { cause?: Error };
    const reason = err.name === 'TimeoutError' ? `no answer within ${request.timeoutMs} ms` : (err.cause?.message ?? err.message);
    throw new HostApiError(`${method} ${request.url} failed: ${reason}`, 0);
  }
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    /* keep the text */
  }
  return { status, body };
}
