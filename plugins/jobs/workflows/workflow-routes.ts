import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import { grantOf, principalOf, requires } from '../../../core/http/access.ts';
import { docs, projectId } from '../../../core/http/schemas.ts';
import { paramsOf, payloadOf, queryOf } from '../../../core/http/request.ts';
import { MAX_INVOKE_WAIT_SECONDS, type WorkflowInvocation, type InvokeBody } from './workflow-invoke.ts';
import * as S from '../job/schemas.ts';

const tags = ['api', 'workflows'];

const params = Joi.object({
  project_id: projectId.required(),
  name: Joi.string().min(1).max(200).required(),
});

const query = Joi.object({
  wait: Joi.boolean().default(false),
  wait_seconds: Joi.number()
    .integer()
    .min(1)
    .max(MAX_INVOKE_WAIT_SECONDS)
    .default(MAX_INVOKE_WAIT_SECONDS)
    .description(`how long wait=true blocks, 1 to ${MAX_INVOKE_WAIT_SECONDS} seconds (default ${MAX_INVOKE_WAIT_SECONDS})`),
});

export const invokeSchema = Joi.object({
  input: Joi.object().unknown(true).description('any JSON object; stored JSON-encoded in hints.request_json, not validated'),
  env_overrides: S.createJobSchema.extract('env_overrides'),
  hints: S.hintsSchema,
  resource_refs: S.createJobSchema
    .extract('resource_refs')
    .description(
      "the run's resources: the root job holds them, and each step takes them per its resource_refs policy (inherit: all, none, or a list of labels, uris or names)",
    ),
}).label('WorkflowInvokeRequest');

const stepJob = Joi.object({
  job_id: S.jobId.required(),
  step_name: Joi.string().required(),
  depends_on: Joi.array().items(Joi.string()),
}).label('WorkflowStepJob');

export const invocationSchema = Joi.object({
  job_id: S.jobId.required(),
  project_id: projectId.required(),
  status: Joi.string()
    .valid(...S.PHASES)
    .required(),
  step_jobs: Joi.array().items(stepJob),
  result_json: Joi.any().description("wait=true and finished in time: the latest attempt's result_json (multi-step: step name → result_json)"),
}).label('WorkflowInvocation');

/**
 * Invoke lives in the jobs plugin (it creates jobs); the manifest is read through the
 * ManifestReader port. 201: created (wait=false); 200: wait=true and the root finished in time,
 * with `result_json`; 202: wait=true and the wait ran out, the current status and no result.
 */
export function workflowRoutes(invocation: WorkflowInvocation): ServerRoute[] {
  return [
    {
      method: 'POST',
      path: '/projects/{project_id}/workflows/{name}/invoke',
      options: {
        id: 'invokeWorkflow',
        tags,
        description: 'Invoke a workflow: a root job and one child job per step (blocked_by from depends_on); wait=true blocks up to 60 s for the result',
        plugins: { ...requires('workflows:invoke', 'project'), ...docs(400, 401, 403, 404, 422) },
        validate: { params, query, payload: invokeSchema.allow(null) },
        response: { status: { 200: invocationSchema, 201: invocationSchema, 202: invocationSchema } },
      },
      handler: async (request, h) => {
        const { wait, wait_seconds } = queryOf<{ wait: boolean; wait_seconds: number }>(request);
        const body = payloadOf<InvokeBody | null>(request) ?? {};
        const created = await invocation.invoke(principalOf(request), grantOf(request).projectId!, grantOf(request), paramsOf(request).name, body);
        if (!wait) return h.response(created).code(201);
        const finished = await invocation.waitFor(created, wait_seconds);
        if (finished) return h.response(finished).code(200);
        return h.response({ ...created, status: await invocation.status(created.job_id) }).code(202);
      },
    },
  ];
}
