import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { grantOf, principalOf, requires } from '../../../core/http/access.ts';
import { docs, projectId } from '../../../core/http/schemas.ts';
import { pageSchema } from '../../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../../core/http/request.ts';
import { JobCreation, type CreateJobInput } from './create.ts';
import { JobService, type JobChanges } from './service.ts';
import type { JobFilters } from './repository.ts';
import * as S from './schemas.ts';

const tags = ['api', 'jobs'];
export const jobParams = Joi.object({ job_id: S.jobId.required() });
const projectParams = Joi.object({ project_id: projectId.required() });

export function jobRoutes(container: DependencyContainer): ServerRoute[] {
  const creation = container.resolve(JobCreation);
  const service = container.resolve(JobService);

  return [
    {
      method: 'POST',
      path: '/projects/{project_id}/jobs',
      options: {
        id: 'createJob',
        tags,
        description:
          'Create a job (only description is required); manifest defaults merge under the given fields; 422 when workers have reported and none can run its harness',
        plugins: { ...requires('jobs:create', 'project'), ...docs(400, 401, 403, 404, 409, 422, 429) },
        validate: { params: projectParams, payload: S.createJobSchema },
        response: { status: { 201: S.jobSchema } },
      },
      handler: async (request, h) => h.response(await creation.create(principalOf(request), grantOf(request), payloadOf<CreateJobInput>(request))).code(201),
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/jobs',
      options: {
        id: 'listJobs',
        tags,
        description: 'Jobs of the project, newest first; filters phase, issue_type, label, assignee, priority, parent_id, due_before',
        plugins: { ...requires('jobs:read', 'project'), ...docs(400, 401, 404) },
        validate: { params: projectParams, query: S.listJobsQuery },
        response: { schema: pageSchema(S.jobSchema, 'JobList') },
      },
      // A job token reaches its own job only, here as on every job route.
      handler: (request) => service.list(paramsOf(request).project_id, { ...queryOf<JobFilters>(request), only_id: principalOf(request).job?.id }),
    },
    {
      method: 'GET',
      path: '/jobs/{job_id}',
      options: {
        id: 'getJob',
        tags,
        description: 'One job',
        plugins: { ...requires('jobs:read', 'job'), ...docs(400, 401, 404) },
        validate: { params: jobParams },
        response: { schema: S.jobSchema },
      },
      handler: (request) => service.get(paramsOf(request).job_id),
    },
    {
      method: 'PATCH',
      path: '/jobs/{job_id}',
      options: {
        id: 'updateJob',
        tags,
        description:
          'Change fields; phase moves between idea, backlog and ready, or to cancelled from any unfinished phase (a running attempt ends); other moves: 409; to ready when no worker can run its harness: 422',
        plugins: { ...requires('jobs:write', 'job'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: jobParams, payload: S.updateJobSchema },
        response: { schema: S.jobSchema },
      },
      handler: (request) => service.update(paramsOf(request).job_id, payloadOf<JobChanges>(request)),
    },
  ];
}
