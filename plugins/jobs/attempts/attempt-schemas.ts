import Joi from 'joi';
import { timestamp } from '../../../core/http/schemas.ts';
import { jobId } from '../job/schemas.ts';
import { ATTEMPT_STATUSES, RESULT_STATUSES } from './attempts.ts';

/** What the API shows of an attempt (the claim, job and race routes). */
export const checkResultSchema = Joi.object({
  command: Joi.string().required(),
  exit_code: Joi.number().integer().allow(null).required(),
  passed: Joi.boolean().required(),
  duration_ms: Joi.number().integer().min(0).required(),
  output_tail: Joi.string().allow('').required().description('the last lines of its output, secrets masked'),
})
  .label('AttemptCheckResult')
  .description("the race's check command, run in the attempt's workspace after its agent ended");

export const attemptSchema = Joi.object({
  id: Joi.string().guid().required(),
  job_id: jobId.required(),
  attempt_number: Joi.number().integer().min(1).required(),
  status: Joi.string()
    .valid(...ATTEMPT_STATUSES)
    .required(),
  result_status: Joi.string()
    .valid(...RESULT_STATUSES)
    .allow(null)
    .required(),
  result_json: Joi.object().unknown(true).allow(null).required().description('the last json-result block; {svc: result} when none was sent'),
  result_summary: Joi.string().allow(null).required(),
  error: Joi.string().allow(null).required(),
  lease_owner: Joi.string().allow(null).required(),
  lease_expires_at: timestamp.allow(null).required(),
  git: Joi.object().unknown(true).allow(null).required(),
  started_at: timestamp.required(),
  ended_at: timestamp.allow(null).required(),
  race_lane: Joi.number().integer().min(1).allow(null).required().description('the race lane it runs (rival attempts), null outside a race'),
  check_result: checkResultSchema.allow(null).required(),
  chosen: Joi.boolean().required().description("the race's attempt chosen as the job's result"),
}).label('Attempt');

export const claimedAttemptSchema = attemptSchema
  .keys({ lease_token: Joi.string().guid().required().description('fences heartbeat, complete and release; shown only to the claimer') })
  .label('ClaimedAttempt');
