import Joi from 'joi';
import { idSchema, orgId, projectId, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';
import { COORDINATION_KEY_PREFIX, MESSAGE_KINDS } from '../../core/ports/threads.ts';

export const MAX_BODY_CHARS = 32_000;
const MAX_MESSAGE_PAGE = 200;
const AUTHOR_TYPES = ['user', 'service_account', 'job', 'system'] as const;

export const threadId = idSchema('thr');
export const messageId = idSchema('msg');
/** Job ids as the jobs domain writes them: `{slug}-{hash8}`, then `.n` per level below the root. */
const jobId = Joi.string().pattern(/^[a-z0-9]{4,8}-[0-9a-f]{8}(\.[1-9][0-9]*){0,2}$/, '{slug}-{hash8}[.n] job id');

/**
 * A key is free text without spaces, except that `coord:` is reserved: `coord:job:<job_id>` is the
 * coordination thread of the team dispatched under that job.
 */
const key = Joi.string()
  .min(1)
  .max(200)
  .pattern(/^\S+$/, 'no whitespace')
  .custom((value: string, helpers) => {
    if (!value.startsWith('coord:')) return value;
    const job = value.startsWith(COORDINATION_KEY_PREFIX) ? value.slice(COORDINATION_KEY_PREFIX.length) : '';
    if (jobId.validate(job).error) return helpers.message({ custom: `"key" starting with coord: must be ${COORDINATION_KEY_PREFIX}<job_id>` });
    return value;
  })
  .description(`unique in the project; ${COORDINATION_KEY_PREFIX}<parent_job_id> is the coordination thread of a team dispatch`);

export const threadSchema = Joi.object({
  id: threadId.required(),
  project_id: projectId.required(),
  key: Joi.string().allow(null).required(),
  title: Joi.string().allow(null).required(),
  coordination: Joi.boolean().required().description(`true for ${COORDINATION_KEY_PREFIX}<job_id> threads: messages are status, directive, question or update`),
  job_id: Joi.string().allow(null).required().description('the job whose team coordinates here (coordination threads)'),
  created_by_type: Joi.string()
    .valid(...AUTHOR_TYPES)
    .required(),
  created_by: Joi.string().allow(null).required(),
  message_count: Joi.number().integer().min(0).required(),
  last_message_at: timestamp.allow(null).required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('Thread');

export const messageSchema = Joi.object({
  id: messageId.required(),
  thread_id: threadId.required(),
  seq: Joi.number().integer().min(1).required().description('1, 2, … in the thread: the order, and the `after` cursor'),
  kind: Joi.string()
    .valid(...MESSAGE_KINDS)
    .required(),
  body: Joi.string().required(),
  author_type: Joi.string()
    .valid(...AUTHOR_TYPES)
    .required(),
  author_id: Joi.string().allow(null).required().description('user, service account or job id'),
  job_id: Joi.string().allow(null).required().description('the job the message is from or about'),
  reply_to: Joi.string().allow(null).required().description('the message this one answers (a question, usually)'),
  metadata: Joi.object().unknown(true).required(),
  created_at: timestamp.required(),
}).label('ThreadMessage');

export const projectParams = Joi.object({ project_id: projectId.required() });
export const threadParams = projectParams.keys({ thread_id: threadId.required() });

export const createThread = Joi.object({
  key,
  title: Joi.string().trim().min(1).max(300),
}).label('CreateThread');

export const ensureThread = createThread.keys({ key: key.required() }).label('EnsureThread');

export const listThreadsQuery = listQuerySchema.keys({
  include_deleted: Joi.forbidden(),
  key: Joi.string().max(200).description('only the thread with this key'),
  job_id: jobId.description('only the coordination thread of this job'),
});

export const postMessage = Joi.object({
  kind: Joi.string()
    .valid(...MESSAGE_KINDS)
    .description('default: message, or update on a coordination thread (where message is not allowed)'),
  body: Joi.string().trim().min(1).max(MAX_BODY_CHARS).required(),
  job_id: jobId.description('the job the message is about; a job token posts as its job'),
  reply_to: messageId.description('a message of this thread that this one answers'),
  metadata: Joi.object().unknown(true).max(50),
}).label('PostThreadMessage');

export const listMessagesQuery = listQuerySchema.keys({
  include_deleted: Joi.forbidden(),
  limit: Joi.number().integer().min(1).max(MAX_MESSAGE_PAGE).default(50).description(`messages per page, 1 to ${MAX_MESSAGE_PAGE}`),
  after: Joi.number().integer().min(0).default(0).description('only messages with a greater seq (a cursor: the last seq read)'),
  kind: Joi.string().valid(...MESSAGE_KINDS),
});

export const distillParams = Joi.object({ org_id: orgId.required(), thread_id: threadId.required() });

export const distillRequest = Joi.object({
  model: Joi.string().min(1).max(200).required().description('the model to distill with, as the gateway names it (`managed/<name>`, `<target>/<model>`, …)'),
  path: Joi.string().min(1).max(1024).description('the org document to write (default `/threads/<thread_id>.md`); an existing one gets a new version'),
  instructions: Joi.string().max(4000).description("added to svc's distillation instructions (focus, audience, format)"),
}).label('DistillRequest');

const count = Joi.number().integer().min(0);
export const distillationSchema = Joi.object({
  thread_id: threadId.required(),
  project_id: projectId.required(),
  model: Joi.string().required().description('the model that answered'),
  messages: count.required().description('how many messages were read (the newest, at most 500)'),
  through_seq: count.required().description('the seq of the newest message read'),
  doc: Joi.object({
    id: Joi.string().required(),
    path: Joi.string().required(),
    version: count.required(),
    created: Joi.boolean().required(),
  })
    .required()
    .label('DistilledDoc'),
  summary: Joi.string().required().description("the document's content"),
  usage: Joi.object({ input_tokens: count.required(), output_tokens: count.required() }).required().label('DistillUsage'),
}).label('Distillation');
