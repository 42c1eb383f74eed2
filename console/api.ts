import { createClient, SvcApiError, type Schemas, type SvcClient } from '../client/index.ts';

export type { Schemas };

/** The API's own resource shapes, from svc/client's types (generated from the OpenAPI document). */
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

/** An API error, worded as the API worded it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * svc's API for the console: same-origin calls carry the session cookie; the CSRF header makes the
 * server accept cookie-signed writes. An error answer throws ApiError; a 401 also tells the app
 * the session is gone.
 */
function consoleClient(): SvcClient {
  return createClient({
    baseUrl: location.origin,
    headers: { 'x-svc-csrf': '1' },
    credentials: 'same-origin',
    mapError: (error) => {
      if (!(error instanceof SvcApiError)) return error;
      if (error.status === 401) window.dispatchEvent(new CustomEvent('svc:signed-out'));
      return new ApiError(error.status, error.message);
    },
  });
}

export const svc = consoleClient();

export const enc = (part: string | number | null | undefined) => encodeURIComponent(part ?? '');
