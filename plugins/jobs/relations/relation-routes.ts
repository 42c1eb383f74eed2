import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { grantOf, principalOf, requires } from '../../../core/http/access.ts';
import { docs, timestamp } from '../../../core/http/schemas.ts';
import { paramsOf, payloadOf } from '../../../core/http/request.ts';
import { JobRelations, type RelationType } from './relations.ts';
import { JobContext } from './context.ts';
import * as S from '../job/schemas.ts';

const tags = ['api', 'jobs'];
const jobParams = Joi.object({ job_id: S.jobId.required() });
const pairParams = Joi.object({ job_id: S.jobId.required(), related_job_id: S.jobId.required() });

const addRelationSchema = Joi.object({
  related_job_id: S.jobId.required(),
  relation_type: Joi.string()
    .valid(...S.RELATION_TYPES)
    .required()
    .description('read "{job_id} <relation_type> {related_job_id}"'),
}).label('AddJobRelation');

const relationSchema = Joi.object({
  job_id: S.jobId.required(),
  related_job_id: S.jobId.required(),
  relation_type: Joi.string()
    .valid(...S.RELATION_TYPES)
    .required(),
  created_at: timestamp.required(),
}).label('JobRelation');

const relationViewSchema = relationSchema
  .keys({
    related: Joi.object({
      id: S.jobId.required(),
      title: Joi.string().required(),
      phase: Joi.string()
        .valid(...S.PHASES)
        .required(),
    })
      .label('RelatedJob')
      .required()
      .description('the job at the other end of the relation from the job asked about'),
  })
  .label('JobRelationView');

const relationList = (what: string) => Joi.array().items(relationViewSchema).required().description(what);
const DEPENDENCIES = 'relations whose other job this job waits for (this job blocked_by / waits_for it, or it blocks / conditional_blocks this job)';
const DEPENDENTS = 'relations whose other job waits for this job';

const dependenciesSchema = Joi.object({
  dependencies: relationList(DEPENDENCIES),
  dependents: relationList(DEPENDENTS),
}).label('JobDependencies');

const attemptSummarySchema = Joi.object({
  id: Joi.string().guid().required(),
  attempt_number: Joi.number().integer().min(1).required(),
  status: Joi.string().required(),
  result_status: Joi.string().allow(null).required(),
  result_summary: Joi.string().allow(null).required(),
  result_json: Joi.object().unknown(true).allow(null).required(),
  error: Joi.string().allow(null).required(),
  git: Joi.object()
    .unknown(true)
    .allow(null)
    .required()
    .description('resolved git metadata: commits, pushed, and `uncommitted` {files, reason} when changes were left uncommitted'),
  started_at: timestamp.required(),
  ended_at: timestamp.allow(null).required(),
}).label('AttemptSummary');

const contextSchema = Joi.object({
  job: S.jobSchema.required(),
  parent: S.jobSchema.allow(null).required().description('null for a root job'),
  children: Joi.array().items(S.jobSchema).required().description('direct children in child-number order'),
  relations: Joi.object({
    dependencies: relationList(DEPENDENCIES),
    dependents: relationList(DEPENDENTS),
    blocking: relationList('the dependencies not yet done or cancelled: the jobs blocking this one'),
  })
    .label('JobContextRelations')
    .required(),
  latest_attempt: attemptSummarySchema.allow(null).required().description('the attempt with the highest attempt_number'),
  latest_rejection_reason: Joi.string().allow(null).required().description('the reason of the latest reject'),
  blocked: Joi.boolean().required().description('true when relations.blocking is not empty'),
  waiting: Joi.boolean().required().description("true when the latest attempt's result_status is waiting"),
  effective_phase: Joi.string()
    .valid('blocked', 'waiting', ...S.PHASES)
    .required()
    .description('blocked, else waiting, else job.phase'),
}).label('JobContext');

/** Jobs nest three levels, so a subtree is at most three levels deep. */
const treeLevel = (children: Joi.Schema | null, label: string) =>
  Joi.object({ job: S.jobSchema.required(), children: (children ? Joi.array().items(children) : Joi.array().length(0)).required() }).label(label);
const treeSchema = treeLevel(treeLevel(treeLevel(null, 'JobTreeLeaf'), 'JobTreeBranch'), 'JobTree');

export function relationRoutes(container: DependencyContainer): ServerRoute[] {
  const relations = container.resolve(JobRelations);
  const context = container.resolve(JobContext);

  return [
    {
      method: 'POST',
      path: '/jobs/{job_id}/dependencies',
      options: {
        id: 'addJobDependency',
        tags,
        description:
          'Relate two jobs of one project: "{job_id} <relation_type> {related_job_id}" (blocked_by and waits_for: job_id waits for related_job_id; ' +
          'blocks and conditional_blocks: related_job_id waits for job_id). 201 when created, 200 when that same relation exists; ' +
          '409 when the pair is related otherwise; 422 for a self-relation, a related job outside the project, or a cycle (named in the message)',
        plugins: { ...requires('jobs:write', 'job'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: jobParams, payload: addRelationSchema },
        response: { status: { 200: relationSchema, 201: relationSchema } },
      },
      handler: async (request, h) => {
        const { related_job_id, relation_type } = payloadOf<{ related_job_id: string; relation_type: RelationType }>(request);
        const { relation, created } = await relations.add(
          principalOf(request),
          grantOf(request).projectId!,
          paramsOf(request).job_id,
          related_job_id,
          relation_type,
        );
        return h.response(relation).code(created ? 201 : 200);
      },
    },
    {
      method: 'GET',
      path: '/jobs/{job_id}/dependencies',
      options: {
        id: 'listJobDependencies',
        tags,
        description:
          'Relations of the job in both directions, oldest first: dependencies (jobs it waits for) and dependents (jobs waiting for it). ' +
          'Each item is the relation as stored ({job_id, related_job_id, relation_type, created_at}) plus related: {id, title, phase} of the other job',
        plugins: { ...requires('jobs:read', 'job'), ...docs(400, 401, 404) },
        validate: { params: jobParams },
        response: { schema: dependenciesSchema },
      },
      handler: (request) => relations.around(paramsOf(request).job_id),
    },
    {
      method: 'DELETE',
      path: '/jobs/{job_id}/dependencies/{related_job_id}',
      options: {
        id: 'removeJobDependency',
        tags,
        description: 'Remove the relation between the two jobs, whichever of them it was added on; 404 when they are not related',
        plugins: { ...requires('jobs:write', 'job'), ...docs(204, 400, 401, 403, 404) },
        validate: { params: pairParams },
      },
      handler: async (request, h) => {
        const { job_id, related_job_id } = paramsOf(request);
        await relations.remove(principalOf(request), grantOf(request).projectId!, job_id, related_job_id);
        return h.response().code(204);
      },
    },
    {
      method: 'GET',
      path: '/jobs/{job_id}/context',
      options: {
        id: 'getJobContext',
        tags,
        description: 'The job with its parent, children, relations (dependencies, dependents, blocking), latest attempt and rejection, and effective phase',
        plugins: { ...requires('jobs:read', 'job'), ...docs(400, 401, 404) },
        validate: { params: jobParams },
        response: { schema: contextSchema },
      },
      handler: (request) => context.context(paramsOf(request).job_id),
    },
    {
      method: 'GET',
      path: '/jobs/{job_id}/tree',
      options: {
        id: 'getJobTree',
        tags,
        description: 'The job and all its descendants, nested as {job, children: [{job, children}]}, children in child-number order',
        plugins: { ...requires('jobs:read', 'job'), ...docs(400, 401, 404) },
        validate: { params: jobParams },
        response: { schema: treeSchema },
      },
      handler: (request) => context.tree(paramsOf(request).job_id),
    },
  ];
}
