import type { components } from './generated/api';

/** The API's own resource shapes, generated from /openapi.json at build time. */
export type Schemas = components['schemas'];
export type Me = Schemas['Me'];
export type Job = Schemas['Job'];
export type Attempt = Schemas['Attempt'];
export type LogLine = Schemas['AttemptLogLine'];
export type AttemptDiff = Schemas['AttemptDiff'];
export type AttemptDiffFile = Schemas['AttemptDiffFile'];
export type PipelineRun = Schemas['PipelineRun'];
export type RunStep = Schemas['PipelineRunStep'];
export type Webhook = Schemas['WebhookSubscription'];
export type Delivery = Schemas['WebhookDelivery'];
export type SvcEvent = Schemas['Event'];
export type Build = Schemas['BuildSpec'];
export type BuildRun = Schemas['BuildRun'];
export type BuildArtifact = Schemas['BuildArtifact'];
export type BuildLogLine = Schemas['BuildLogLine'];
export type Release = Schemas['Release'];
export interface Page<T> {
  data: T[];
  pagination: { total: number; has_more: boolean };
}

/** An API error, worded as the API worded it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Same-origin calls carry the session cookie; the CSRF header makes the server accept cookie-signed writes. */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', 'x-svc-csrf': '1' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 204) return undefined as T;
  const data = (await res.json().catch(() => null)) as { message?: string } | null;
  if (!res.ok) {
    const error = new ApiError(res.status, data?.message ?? `${res.status} ${res.statusText}`);
    if (res.status === 401) window.dispatchEvent(new CustomEvent('svc:signed-out'));
    throw error;
  }
  return data as T;
}

export const get = <T>(path: string) => api<T>('GET', path);
export const post = <T>(path: string, body: unknown = {}) => api<T>('POST', path, body);
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, body);
export const enc = (part: string | number | null | undefined) => encodeURIComponent(part ?? '');
