import Joi from 'joi';
import { FORMER_PREFIXES, TYPEID_SUFFIX, type IdPrefix } from '../ids.ts';

export const idSchema = (prefix: IdPrefix) => {
  const former = FORMER_PREFIXES[prefix];
  return Joi.string()
    .pattern(new RegExp(`^(?:${prefix}${former ? `|${former}` : ''})_${TYPEID_SUFFIX}$`), `${prefix}_<base32> id`)
    .example(`${prefix}_01h455vb4pex5vsknk084sn02q`);
};

export const orgId = idSchema('org');
export const projectId = idSchema('proj');
export const userId = idSchema('usr');

export const timestamp = Joi.date().iso();

export const roleSchema = Joi.string().valid('owner', 'admin', 'member');

export const errorSchema = Joi.object({
  statusCode: Joi.number().integer().required(),
  error: Joi.string().required(),
  message: Joi.string().required(),
})
  .unknown(true)
  .label('Error');

const RESPONSE_TEXT: Record<number, string> = {
  204: 'Done; no content',
  400: 'Invalid input',
  401: 'Missing or invalid token',
  403: 'Missing permission',
  404: 'Not found',
  408: 'The request was not received within server.body_timeout_ms',
  409: 'State conflict',
  413: 'Payload too large',
  422: 'Business rule violated',
  429: "Too many requests: the caller's rate limit or an org quota (limits.*)",
  502: 'An external system (a deployer) failed',
  503: 'Unavailable',
};

/** The non-2xx (and 204) responses a route may answer, for the OpenAPI document: `plugins: {...docs(400, 404)}`. */
export function docs(...codes: number[]) {
  const responses = Object.fromEntries(
    codes.map((c) => [c, c === 204 ? { description: RESPONSE_TEXT[c] } : { description: RESPONSE_TEXT[c] ?? 'Error', schema: errorSchema }]),
  );
  return { 'hapi-swagger': { responses } };
}

/** The query of a server-sent event stream: where to resume (the Last-Event-ID header wins). */
export const eventStreamQuery = (what: string) =>
  Joi.object({ last_event_id: Joi.number().integer().min(0).description(`resume after this ${what} (the Last-Event-ID header wins)`) });

/** hapi validates objects only: the schema documents a text/event-stream body, sample 0 skips the check. */
export const eventStreamResponse = (label: string, description: string) => ({
  schema: Joi.string().label(label).description(`text/event-stream: ${description}`),
  sample: 0,
});

/** An account's e-mail, as accounts are keyed (lower case). */
export const emailSchema = Joi.string().trim().lowercase().email({ tlds: false }).max(320);
