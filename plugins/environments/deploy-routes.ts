import type { ServerRoute } from '@hapi/hapi';
import { principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import type { DeployRequest } from './service.ts';
import type { DeployService } from './deploy-service.ts';
import type { DeployReviews } from './deploy-reviews.ts';
import { BASE, tags } from './routes.ts';
import * as S from './schemas.ts';

/** An environment's deploys: list, read, deploy, roll back. */
export function deployRoutes(service: DeployService, reviews: DeployReviews): ServerRoute[] {
  const review = (decision: 'approve' | 'reject'): ServerRoute => ({
    method: 'POST',
    path: `${BASE}/{env}/deploys/{deploy_id}/${decision}`,
    options: {
      id: `${decision}Deploy`,
      tags,
      description:
        decision === 'approve'
          ? "Approve a deploy awaiting approval (one of the environment's reviewers, not its creator): with required_approvals reached it goes ahead, after the wait timer if one is left"
          : "Reject a deploy awaiting approval (one of the environment's reviewers): it ends rejected",
      plugins: { ...requires('environments:write', 'project'), ...docs(400, 401, 403, 404, 409, 422) },
      validate: { params: S.deployParams, payload: S.reviewSchema.allow(null) },
      response: { schema: S.deploySchema },
    },
    handler: (request) => {
      const { project_id, env, deploy_id } = paramsOf(request);
      const comment = payloadOf<{ comment?: string } | null>(request)?.comment ?? null;
      return reviews[decision](principalOf(request).id, project_id, env, deploy_id, comment);
    },
  });
  return [
    review('approve'),
    review('reject'),
    {
      method: 'GET',
      path: `${BASE}/{env}/deploys`,
      options: {
        id: 'listDeploys',
        tags,
        description: "The environment's deploys, newest first",
        plugins: { ...requires('environments:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.envParams, query: S.deploysQuery },
        response: { schema: pageSchema(S.deploySchema, 'DeployList') },
      },
      handler: (request) => service.deploys(paramsOf(request).project_id, paramsOf(request).env, queryOf<ListQuery>(request)),
    },
    {
      method: 'GET',
      path: `${BASE}/{env}/deploys/{deploy_id}`,
      options: {
        id: 'getDeploy',
        tags,
        description: 'One deploy',
        plugins: { ...requires('environments:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.deployParams },
        response: { schema: S.deploySchema },
      },
      handler: (request) => service.deployById(paramsOf(request).project_id, paramsOf(request).env, paramsOf(request).deploy_id),
    },
    {
      method: 'POST',
      path: `${BASE}/{env}/deploy`,
      options: {
        id: 'deployRelease',
        tags,
        description: "Deploy a release (spec's Deploy request): through the environment's pipeline unless direct",
        plugins: { ...requires('environments:write', 'project'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.envParams, payload: S.deployRequestSchema },
        response: { status: { 202: S.deploySchema } },
      },
      handler: async (request, h) => {
        const { project_id, env } = paramsOf(request);
        const deploy = await service.deploy(principalOf(request), project_id, env, payloadOf<DeployRequest>(request));
        return h.response((await service.withReviews([deploy]))[0]).code(202);
      },
    },
    {
      method: 'POST',
      path: `${BASE}/{env}/rollback`,
      options: {
        id: 'rollbackEnvironment',
        tags,
        description: 'Deploy an earlier release again: the one named, else the one before the current',
        plugins: { ...requires('environments:write', 'project'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.envParams, payload: S.rollbackSchema.allow(null) },
        response: { status: { 202: S.deploySchema } },
      },
      handler: async (request, h) => {
        const { project_id, env } = paramsOf(request);
        const body = payloadOf<{ release_id?: string; release_tag?: string } | null>(request) ?? {};
        return h.response((await service.withReviews([await service.rollback(principalOf(request), project_id, env, body)]))[0]).code(202);
      },
    },
  ];
}
