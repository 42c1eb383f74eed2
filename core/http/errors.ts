import Boom from '@hapi/boom';

/** The one table from what a domain error means to the HTTP status a caller sees (DESIGN "Errors"). */
export const HTTP_STATUS = {
  bad_request: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  invalid: 422,
  too_many: 429,
  upstream: 502,
} as const;
export type ErrorKind = keyof typeof HTTP_STATUS;

/**
 * Gives a domain error (core/errors.ts) its HTTP form: the status of its kind, the message, and its
 * details as extra body fields (`blocked_on_gates`, `jobId`). It is applied as the error is made, so
 * hapi answers with it from any route and in-process callers still see the same error; nothing
 * reads the status back to learn what went wrong, they test the error's class.
 */
export function renderHttp(err: Error & { kind: ErrorKind; details: Record<string, unknown> }): void {
  const boom = Boom.boomify(err, { statusCode: HTTP_STATUS[err.kind] });
  Object.assign(boom.output.payload, err.details);
}
