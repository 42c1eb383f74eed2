import Joi from 'joi';
import { idSchema, orgId, projectId, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';
import { patternProblem } from '../../core/events/patterns.ts';

export const webhookId = idSchema('wh');
export const deliveryId = idSchema('whd');
export const replayId = idSchema('rpl');
const eventId = idSchema('evt');

export const DELIVERY_STATUSES = ['pending', 'retrying', 'succeeded', 'failed'] as const;
export const DELIVERY_KINDS = ['event', 'replay', 'test'] as const;
export const MAX_REPLAY_EVENTS = 10_000;

export const orgParams = Joi.object({ org_id: orgId.required() });
export const projectParams = Joi.object({ project_id: projectId.required() });
export const webhookParams = orgParams.keys({ wh_id: webhookId.required() });
export const replayParams = webhookParams.keys({ replay_id: replayId.required() });

/** An exact name, `prefix*`, `*suffix` or `*` (core/events/patterns.ts). */
const pattern = Joi.string()
  .min(1)
  .max(200)
  .custom((value: string, helpers) => {
    const problem = patternProblem(value);
    return problem ? helpers.message({ custom: `{{#label}} is not a pattern: ${problem}` }) : value;
  });

const filterSchema = Joi.object({
  project_id: projectId.description('only events of this project'),
  agent: pattern.description("pattern over the payload's agent (agent, agent_slug or assignee)"),
}).label('WebhookFilter');

export const createSchema = Joi.object({
  url: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .max(2048)
    .required()
    .description('delivery endpoint (http or https)'),
  events: Joi.array()
    .items(pattern)
    .min(1)
    .max(100)
    .unique()
    .required()
    .description('event types: exact, `prefix*` (`system.job.*`), `*suffix` or `*`; `job.failed` also matches `system.job.failed`'),
  filter: filterSchema.default({}),
  secret: Joi.string().min(16).max(256).required().description('HMAC signing secret; stored sealed, never returned'),
  enabled: Joi.boolean().default(true),
}).label('WebhookCreate');

/** The fields a subscription's owner may change after creating it; the scope (org, project) stays. */
export const updateSchema = createSchema
  .fork(['url', 'events', 'secret'], (f) => f.optional())
  .fork(['filter'], () => filterSchema)
  .fork(['enabled'], () => Joi.boolean())
  .keys({ secret: Joi.forbidden().messages({ 'any.unknown': '{{#label}} is changed with POST …/rotate-secret' }) })
  .min(1)
  .messages({ 'object.min': 'say what to change: url, events, filter or enabled' })
  .label('WebhookUpdate');

export const rotateSecretSchema = Joi.object({
  secret: Joi.string().min(16).max(256).required().description('the new HMAC signing secret; every delivery from now on is signed with it'),
}).label('WebhookSecretRotation');

export const listQuery = listQuerySchema.keys({
  project_id: projectId.description('only subscriptions scoped to this project'),
  enabled: Joi.boolean(),
});

export const deliveriesQuery = listQuerySchema.keys({
  status: Joi.string().valid(...DELIVERY_STATUSES),
  kind: Joi.string().valid(...DELIVERY_KINDS),
});

export const replaySchema = Joi.object({
  from_event: eventId.required().description('first event of the window (inclusive)'),
  to: timestamp.description('end of the window (default now)'),
  max_events: Joi.number().integer().min(1).max(MAX_REPLAY_EVENTS).default(5000),
  dry_run: Joi.boolean().default(false),
}).label('WebhookReplayRequest');

/** Body fields of a replay whose errors are a bad window (code webhook_replay_window_invalid). */
export const WINDOW_FIELDS = ['from_event', 'to', 'max_events'];

export const subscriptionSchema = Joi.object({
  id: webhookId.required(),
  org_id: orgId.required(),
  project_id: projectId.allow(null).required().description('set for a project-scoped subscription'),
  url: Joi.string().required(),
  events: Joi.array().items(Joi.string()).required(),
  filter: filterSchema.required(),
  enabled: Joi.boolean().required(),
  consecutive_failures: Joi.number().integer().required(),
  disabled_at: timestamp.allow(null).required(),
  disabled_reason: Joi.string().allow(null).required(),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
  deleted_at: timestamp.allow(null).required(),
}).label('WebhookSubscription');

export const deliverySchema = Joi.object({
  id: deliveryId.required(),
  subscription_id: webhookId.required(),
  event_id: eventId.required(),
  event_type: Joi.string().required(),
  kind: Joi.string()
    .valid(...DELIVERY_KINDS)
    .required(),
  replay_id: replayId.allow(null).required(),
  dedupe_key: Joi.string()
    .allow(null)
    .required()
    .description('`app_link:<subscription_id>:<source_event_id>` on deliveries of events: an event routed to a subscription again gets no second one'),
  status: Joi.string()
    .valid(...DELIVERY_STATUSES)
    .required(),
  attempts: Joi.number().integer().required(),
  next_attempt_at: timestamp.allow(null).required(),
  last_attempt_at: timestamp.allow(null).required(),
  response_status: Joi.number().integer().allow(null).required(),
  response_body: Joi.string().allow('', null).required().description('first 4096 characters'),
  error: Joi.string().allow(null).required().description('why no HTTP answer came (connection, timeout, refused address)'),
  duration_ms: Joi.number().integer().allow(null).required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
  completed_at: timestamp.allow(null).required(),
}).label('WebhookDelivery');

export const replayResponseSchema = Joi.object({
  id: replayId.required(),
  subscription_id: webhookId.required(),
  status: Joi.string().valid('running', 'completed').required(),
  dry_run: Joi.boolean().required(),
  from_event: eventId.required(),
  to: timestamp.required(),
  max_events: Joi.number().integer().required(),
  events_matched: Joi.number().integer().required().description('events in the window that match the subscription'),
  events_enqueued: Joi.number().integer().required(),
  events_skipped: Joi.number().integer().required().description('already delivered, or a delivery in flight'),
  progress: Joi.object({
    pending: Joi.number().integer().required(),
    succeeded: Joi.number().integer().required(),
    failed: Joi.number().integer().required(),
  })
    .required()
    .label('WebhookReplayProgress'),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
  completed_at: timestamp.allow(null).required(),
}).label('WebhookReplay');
