import Joi from 'joi';
import { idSchema, projectId, timestamp } from '../http/schemas.ts';
import { EVENT_SOURCES } from './emit.ts';

export const EVENT_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

export const eventId = idSchema('evt');
export const eventSource = Joi.string().valid(...EVENT_SOURCES);

/**
 * An event as the spine records it: the fields every answer that shows an event has. The events
 * domain adds its routing and bookkeeping (its `Event`); inbound deliveries answer these alone.
 */
export const recordedEventSchema = Joi.object({
  id: eventId.required(),
  project_id: projectId.required(),
  type: Joi.string().required(),
  source: eventSource.required(),
  status: Joi.string()
    .valid(...EVENT_STATUSES)
    .required(),
  payload_json: Joi.object().unknown(true).required(),
  env_name: Joi.string().allow(null).required(),
  ref_sha: Joi.string().allow(null).required(),
  ref_branch: Joi.string().allow(null).required(),
  actor_type: Joi.string().valid('user', 'system', 'app').allow(null).required(),
  actor_id: Joi.string().allow(null).required(),
  dedupe_key: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
});
