import Boom from '@hapi/boom';
import type { Server } from '@hapi/hapi';

/** The spec's webhook error codes, carried as `code` beside the Boom fields. */
export type WebhookErrorCode = 'resource_conflict' | 'webhook_replay_window_invalid' | 'resource_not_found';

export function withCode<T extends Boom.Boom>(error: T, code: WebhookErrorCode): T {
  error.output.payload.code = code;
  return error;
}

export const windowInvalid = (message: string, status: 400 | 422 = 422) =>
  withCode(status === 400 ? Boom.badRequest(message) : Boom.badData(message), 'webhook_replay_window_invalid');

const DEFAULT_CODES: Partial<Record<number, WebhookErrorCode>> = { 404: 'resource_not_found', 409: 'resource_conflict' };

/** Every 404 and 409 of this plugin's routes (the access check's included) carries its code. */
export function installErrorCodes(server: Server): void {
  server.ext(
    'onPreResponse',
    (request, h) => {
      const response = request.response;
      if (Boom.isBoom(response)) {
        const code = DEFAULT_CODES[response.output.statusCode];
        if (code && response.output.payload.code === undefined) response.output.payload.code = code;
      }
      return h.continue;
    },
    { sandbox: 'plugin' },
  );
}
