import Joi from 'joi';
import { idSchema, orgId, projectId, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';
import { EVENT_STATUSES, eventId, eventSource as source, recordedEventSchema } from '../../core/events/schema.ts';
import { cronProblem } from '../../core/cron.ts';

export const scheduleId = idSchema('sch');

/** Namespaced, dot-separated: `vcshost.push`, `manual.deploy-requested`, `app.UserSignedUp`. */
export const eventType = Joi.string()
  .max(200)
  .pattern(/^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$/, 'dot-separated event type such as manual.deploy');
const text = (max: number) => Joi.string().trim().min(1).max(max);

export const projectParams = Joi.object({ project_id: projectId.required() });
export const orgParams = Joi.object({ org_id: orgId.required() });
export const eventParams = projectParams.keys({ event_id: eventId.required() });
export const scheduleParams = projectParams.keys({ schedule_id: scheduleId.required() });

export const createEventSchema = Joi.object({
  type: eventType.required(),
  source: source.default('manual').description("runner and system are the platform's own (403)"),
  env_name: text(200).allow(null),
  ref_branch: text(255).allow(null),
  ref_sha: Joi.string()
    .pattern(/^[0-9a-fA-F]{7,64}$/, 'hex commit SHA')
    .allow(null),
  actor_type: Joi.string().valid('user', 'system', 'app').default('user'),
  actor_id: text(200).allow(null).description('default: the caller'),
  dedupe_key: text(500).allow(null).description('an event with a key the project has already seen is not created again: 200 with that event'),
  mutation_id: text(200).allow(null),
  request_id: text(200).allow(null),
  payload: Joi.object().unknown(true).default({}).description('any JSON object; forwarded as input to what the event triggers'),
}).label('EventRequest');

export const eventsQuery = listQuerySchema.keys({
  type: eventType,
  source,
  status: Joi.string().valid(...EVENT_STATUSES),
});

const decision = Joi.object({
  kind: Joi.string().valid('pipeline', 'workflow').required(),
  name: Joi.string().required(),
}).unknown(true);

const routingSchema = Joi.object({
  manifest_hash: Joi.string().allow(null).required(),
  routed_at: timestamp.required(),
  matched: Joi.array()
    .items(
      decision.keys({
        matched: Joi.boolean().valid(true).required(),
        trigger: Joi.string().required().description('the clause that fired'),
        run_id: Joi.string().description('the pipeline run started'),
        job_id: Joi.string().description('the workflow job started'),
        error: Joi.string().description('why it could not be started'),
      }),
    )
    .required(),
  not_matched: Joi.array()
    .items(decision.keys({ matched: Joi.boolean().valid(false).required(), reason: Joi.string().required() }))
    .required(),
}).label('EventRouting');

export const eventSchema = recordedEventSchema
  .keys({
    mutation_id: Joi.string().allow(null).required(),
    request_id: Joi.string().allow(null).required(),
    routing: routingSchema.allow(null).required().description('which triggers matched (and what they started) and why the others did not; null until routed'),
    error: Joi.string().allow(null).required().description('why routing failed'),
    updated_at: timestamp.required(),
  })
  .label('Event');

const cron = Joi.string()
  .trim()
  .max(200)
  .custom((value: string, helpers) => {
    const problem = cronProblem(value);
    return problem ? helpers.message({ custom: `"cron" ${problem}` }) : value;
  })
  .description('standard 5-field cron expression, UTC');

export const createScheduleSchema = Joi.object({
  name: text(200).allow(null),
  cron: cron.required(),
  event_type: eventType.default('cron.tick'),
  payload: Joi.object().unknown(true).default({}),
  enabled: Joi.boolean().default(true),
}).label('ScheduleRequest');

export const ensureScheduleSchema = createScheduleSchema
  .keys({ name: text(200).required().description('what the schedule is known by in the project') })
  .label('ScheduleEnsure');

export const updateScheduleSchema = Joi.object({
  name: text(200).allow(null),
  cron,
  event_type: eventType,
  payload: Joi.object().unknown(true),
  enabled: Joi.boolean(),
})
  .min(1)
  .messages({ 'object.min': 'give at least one of name, cron, event_type, payload, enabled' })
  .label('ScheduleUpdate');

export const schedulesQuery = listQuerySchema.keys({ enabled: Joi.boolean() });

export const scheduleSchema = Joi.object({
  id: scheduleId.required(),
  project_id: projectId.required(),
  name: Joi.string().allow(null).required(),
  cron: Joi.string().required(),
  event_type: Joi.string().required(),
  payload: Joi.object().unknown(true).required(),
  enabled: Joi.boolean().required(),
  created_by: Joi.string().allow(null).required(),
  last_fired_at: timestamp.allow(null).required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('Schedule');
