import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../../core/di.ts';
import { principalOf, requires } from '../../../core/http/access.ts';
import { docs } from '../../../core/http/schemas.ts';
import { paramsOf, payloadOf } from '../../../core/http/request.ts';
import { jobSchema, openPullRequestSchema } from '../job/schemas.ts';
import { jobParams } from '../job/routes.ts';
import { PullRequests, type OpenPullRequest } from './pull-requests.ts';

export function pullRequestRoutes(container: DependencyContainer): ServerRoute[] {
  const pullRequests = container.resolve(PullRequests);
  return [
    {
      method: 'POST',
      path: '/jobs/{job_id}/pull-request',
      options: {
        id: 'openJobPullRequest',
        tags: ['api', 'jobs'],
        description: "Propose a finished job's work as a pull request on the code host",
        notes:
          "The head is the branch the job's work was pushed to (resolved_git.resolved_branch), the base the project's branch unless given; the title is the job's and the body its latest result summary unless given. 201 with the job and its `pull_request`; 200 with the job when it has one already (nothing is opened twice). 409 for a job not in review or done; 422 when its work was not pushed, no code host is configured, the project's repository is not on one, or the host refuses (its message included); 502 when the host does not answer. The host's pull_request and pull_request_review deliveries then keep `pull_request` up to date: merged or approved moves a job in review to done, changes requested sends it back to ready with the review as its rejection reason.",
        plugins: { ...requires('jobs:write', 'job'), ...docs(400, 401, 403, 404, 409, 422, 502) },
        validate: { params: jobParams, payload: openPullRequestSchema },
        response: { status: { 200: jobSchema, 201: jobSchema } },
      },
      handler: async (request, h) => {
        const { created, job } = await pullRequests.open(paramsOf(request).job_id, principalOf(request).id, payloadOf<OpenPullRequest | null>(request) ?? {});
        return h.response(job).code(created ? 201 : 200);
      },
    },
  ];
}
