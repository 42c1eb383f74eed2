import Joi from 'joi';
import { eventStreamQuery, eventStreamResponse, idSchema, projectId, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';
import { RUN_STATUSES, STEP_STATUSES } from './status.ts';

export const runId = idSchema('prun');
const name = Joi.string().min(1).max(200);

export const pipelineParams = Joi.object({ project_id: projectId.required(), name: name.required() });
export const pipelineRunParams = pipelineParams.keys({ run_id: runId.required() });
export const projectRunParams = Joi.object({ project_id: projectId.required(), run_id: runId.required() });
export const runParams = Joi.object({ run_id: runId.required() });
export const stepParams = runParams.keys({ name: name.required() });

export const runRequestSchema = Joi.object({
  ref: Joi.string().trim().min(1).max(255).description('branch, tag or 40-hex commit SHA the steps work on'),
  env: Joi.string().min(1).max(200).description('an environment of the manifest; its pipeline_inputs (when it names this pipeline) are the base of inputs'),
  inputs: Joi.object()
    .unknown(true)
    .description(
      "pipeline inputs; override the environment's pipeline_inputs key by key, which override the pipeline's declared defaults. 422 when a required input is missing, or when the pipeline declares its inputs and this names one it does not",
    ),
  only_steps: Joi.array().items(name).min(1).unique().description('run only these steps; dependencies outside them count as met'),
}).label('PipelineRunRequest');

export const approveSchema = Joi.object({ comment: Joi.string().max(2000) }).label('PipelineRunApproval');
export const cancelSchema = Joi.object({ reason: Joi.string().max(2000) }).label('PipelineRunCancel');

export const runsQuery = listQuerySchema.keys({ status: Joi.string().valid(...RUN_STATUSES) });

const stepSchema = Joi.object({
  name: Joi.string().required(),
  job_id: Joi.string().required(),
  execution_type: Joi.string().valid('action', 'script', 'agent').required(),
  depends_on: Joi.array().items(Joi.string()).required(),
  approval: Joi.boolean().required(),
  status: Joi.string()
    .valid(...STEP_STATUSES)
    .required(),
  approved_by: Joi.string().allow(null).required().description('user or service account'),
  approved_at: timestamp.allow(null).required(),
  started_at: timestamp.allow(null).required(),
  completed_at: timestamp.allow(null).required(),
}).label('PipelineRunStep');

export const runSchema = Joi.object({
  id: runId.required(),
  project_id: projectId.required(),
  pipeline_name: Joi.string().required(),
  status: Joi.string()
    .valid(...RUN_STATUSES)
    .required(),
  ref: Joi.string().allow(null).required(),
  git_sha: Joi.string().length(40).allow(null).required(),
  env_name: Joi.string().allow(null).required(),
  inputs: Joi.object().unknown(true).required(),
  only_steps: Joi.array().items(Joi.string()).allow(null).required(),
  manifest_hash: Joi.string().required(),
  error_message: Joi.string().allow(null).required(),
  cancel_reason: Joi.string().allow(null).required(),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
  started_at: timestamp.allow(null).required(),
  completed_at: timestamp.allow(null).required(),
  updated_at: timestamp.required(),
  steps: Joi.array().items(stepSchema).required(),
}).label('PipelineRun');

/** A step's job in the jobs domain's Job shape (that domain's schema checks it there). */
export const stepJobSchema = Joi.object({ id: Joi.string().required(), project_id: projectId.required() }).unknown(true).label('PipelineRunJob');

export const streamQuery = eventStreamQuery('event id');
export const eventStream = eventStreamResponse('PipelineRunEventStream', '`id`, `event` (run.status, step.status, step.log), `data` (JSON) per event');
