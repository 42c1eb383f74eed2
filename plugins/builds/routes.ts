import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import { BuildRepository } from './repository.ts';
import { BuildService, type CreateBuildInput } from './service.ts';
import * as S from './schemas.ts';

export const tags = ['api', 'builds'];

/** Build specs, their runs, artifacts and cancel. Logs are in log-routes.ts. */
export function buildRoutes(container: DependencyContainer): ServerRoute[] {
  const service = container.resolve(BuildService);
  const builds = container.resolve(BuildRepository);

  return [
    {
      method: 'POST',
      path: '/projects/{project_id}/builds',
      options: {
        id: 'createBuild',
        tags,
        description:
          'Build the services of a commit: the spec and its first run (pending; a worker builds it). manifest_hash must match the manifest synced for git_sha (synced from the repository when missing)',
        plugins: { ...requires('builds:write', 'project'), ...docs(400, 401, 403, 404, 422) },
        validate: { params: S.projectParams, payload: S.createBuildSchema },
        response: { status: { 201: S.buildSchema } },
      },
      handler: async (request, h) =>
        h.response(await service.create(paramsOf(request).project_id, payloadOf<CreateBuildInput>(request), principalOf(request))).code(201),
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/builds',
      options: {
        id: 'listBuilds',
        tags,
        description: "The project's builds, newest first, each with its latest run",
        plugins: { ...requires('builds:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.projectParams, query: S.listBuildsQuery },
        response: { schema: pageSchema(S.buildSchema, 'BuildSpecList') },
      },
      handler: (request) => service.list(paramsOf(request).project_id, queryOf<ListQuery & { git_sha?: string }>(request)),
    },
    {
      method: 'GET',
      path: '/builds/{build_id}',
      options: {
        id: 'getBuild',
        tags,
        description: 'One build spec with its latest run',
        plugins: { ...requires('builds:read', 'build'), ...docs(400, 401, 403, 404) },
        validate: { params: S.buildParams },
        response: { schema: S.buildSchema },
      },
      handler: (request) => service.get(paramsOf(request).build_id),
    },
    {
      method: 'POST',
      path: '/builds/{build_id}/runs',
      options: {
        id: 'rerunBuild',
        tags,
        description: 'Run the build again (409 while a run is active); reuses an earlier success unless force_rebuild',
        plugins: { ...requires('builds:write', 'build'), ...docs(400, 401, 403, 404, 409) },
        validate: { params: S.buildParams, payload: S.rerunSchema },
        response: { status: { 201: S.runSchema } },
      },
      handler: async (request, h) => {
        const body = payloadOf<{ force_rebuild?: boolean } | null>(request);
        return h.response(await service.rerun(paramsOf(request).build_id, body?.force_rebuild ?? false, principalOf(request))).code(201);
      },
    },
    {
      method: 'GET',
      path: '/builds/{build_id}/runs',
      options: {
        id: 'listBuildRuns',
        tags,
        description: 'Runs of the build, newest first',
        plugins: { ...requires('builds:read', 'build'), ...docs(400, 401, 403, 404) },
        validate: { params: S.buildParams, query: S.runsQuery },
        response: { schema: pageSchema(S.runSchema, 'BuildRunList') },
      },
      handler: (request) => builds.listRuns(paramsOf(request).build_id, queryOf<ListQuery & { status?: S.RunStatus }>(request)),
    },
    {
      method: 'GET',
      path: '/builds/{build_id}/artifacts',
      options: {
        id: 'listBuildArtifacts',
        tags,
        description: "Images of the build's latest completed run (empty until one completes)",
        plugins: { ...requires('builds:read', 'build'), ...docs(400, 401, 403, 404) },
        validate: { params: S.buildParams },
        response: { schema: Joi.object({ data: Joi.array().items(S.artifactSchema).required() }).label('BuildArtifactList') },
      },
      handler: async (request) => ({ data: await builds.artifacts(paramsOf(request).build_id) }),
    },
    {
      method: 'POST',
      path: '/builds/{build_id}/cancel',
      options: {
        id: 'cancelBuild',
        tags,
        description: 'Cancel the active run (pending or building); a finished build is a 409',
        plugins: { ...requires('builds:write', 'build'), ...docs(400, 401, 403, 404, 409) },
        validate: { params: S.buildParams, payload: Joi.object({}).allow(null).label('Empty') },
        response: { schema: S.buildSchema },
      },
      handler: (request) => service.cancel(paramsOf(request).build_id),
    },
  ];
}
