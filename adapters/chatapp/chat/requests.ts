/**
 * Reading the event requests of a Slack-compatible chat app: the URL-verification handshake and
 * `event_callback` envelopes holding `message` and `app_mention` events.
 */
import Joi from 'joi';
import type { ChatDelivery } from '../../../core/ports/chatapp.ts';

/** Messages that are someone writing; edits, deletions, joins and bot posts (svc's own notifications among them) are not. */
const STORED_SUBTYPES = new Set(['thread_broadcast', 'file_share']);
const EVENT_TYPES: Record<string, string> = { message: 'chatapp.message', app_mention: 'chatapp.app_mention' };

const id = Joi.string().pattern(/^[A-Za-z0-9_-]{1,64}$/);
const ts = Joi.string().pattern(/^\d{1,12}(\.\d{1,9})?$/);

const handshakeSchema = Joi.object({ type: Joi.string().required(), challenge: Joi.string().min(1).max(1000).required() }).unknown(true);

const envelopeSchema = Joi.object({
  type: Joi.string().required(),
  team_id: id.required(),
  event_id: Joi.string().max(200),
  event: Joi.object({
    type: Joi.string().required(),
    channel: id.required(),
    user: id.required(),
    text: Joi.string().allow('').default(''),
    ts: ts.required(),
    thread_ts: ts,
  })
    .unknown(true)
    .required(),
}).unknown(true);

export function readRequest(body: unknown): ChatDelivery {
  const type = (body as { type?: unknown }).type;
  if (type === 'url_verification') {
    const { value, error } = handshakeSchema.validate(body);
    return error ? { kind: 'invalid', message: `url_verification: ${error.message}` } : { kind: 'url_verification', challenge: value.challenge };
  }
  if (type !== 'event_callback') return { kind: 'ignored', reason: `requests of type ${String(type).slice(0, 100)} are not stored` };
  const inner = (body as { event?: { type?: unknown; subtype?: unknown; bot_id?: unknown } }).event;
  const eventType = typeof inner?.type === 'string' ? EVENT_TYPES[inner.type] : undefined;
  if (!eventType) return { kind: 'ignored', reason: `events of type ${String(inner?.type).slice(0, 100)} are not stored` };
  if (inner!.bot_id !== undefined || (inner!.subtype !== undefined && !STORED_SUBTYPES.has(String(inner!.subtype)))) {
    return { kind: 'ignored', reason: 'bot messages, edits, deletions and other message subtypes are not stored' };
  }
  const { value, error } = envelopeSchema.validate(body);
  if (error) return { kind: 'invalid', message: `event_callback: ${error.message}` };
  const event = value.event;
  return {
    kind: 'event',
    team_id: value.team_id,
    channel: event.channel,
    event: {
      type: eventType,
      payload: { text: event.text, channel: event.channel, user: event.user, ts: event.ts, thread_ts: event.thread_ts ?? null, team_id: value.team_id },
      ref_sha: null,
      ref_branch: null,
      actor_type: 'user',
      actor_id: `chatapp:${event.user}`,
      dedupe_key: value.event_id ? `chatapp:${value.event_id}` : null,
    },
  };
}
