import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { authenticated, principalOf } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import { ProviderCatalog } from './catalog.ts';
import { ManagedModelService, type ManagedModelInput } from './managed-models.ts';
import { ModelList } from './model-list.ts';
import { TargetService, type TargetChanges, type TargetInput } from './targets.ts';
import * as S from './schemas.ts';

const tags = ['api', 'inference'];

type OrgQuery = ListQuery & { org_id?: string; project_id?: string };

/** Providers, models, inference targets and the managed-model catalog (docs/inference.md). Access is decided per scope in the services. */
export function inferenceRoutes(container: DependencyContainer): ServerRoute[] {
  const catalog = container.resolve(ProviderCatalog);
  const models = container.resolve(ModelList);
  const targets = container.resolve(TargetService);
  const managed = container.resolve(ManagedModelService);

  return [
    {
      method: 'GET',
      path: '/providers',
      options: {
        id: 'listProviders',
        tags,
        description: 'The configured model providers: wire kind, base URL and the name of the secret holding the key (never its value)',
        plugins: { ...authenticated, ...docs(400, 401) },
        validate: { query: S.pageQuery },
        response: { schema: pageSchema(S.providerSchema, 'ProviderList') },
      },
      handler: (request) => inMemoryPage(catalog.list(), queryOf<ListQuery>(request)),
    },
    {
      method: 'GET',
      path: '/providers/{name}/models',
      options: {
        id: 'listProviderModels',
        tags,
        description: "A provider's models: from its own models endpoint when its key is set (cached briefly), else as configured",
        plugins: { ...authenticated, ...docs(400, 401, 404) },
        validate: { params: S.providerParams, query: S.pageQuery },
        response: { schema: pageSchema(S.modelSchema, 'ProviderModelList') },
      },
      handler: async (request) => {
        const list = await catalog.models(paramsOf(request).name);
        return inMemoryPage(
          list.map((m) => ({
            id: m.id,
            object: 'model',
            source: m.source,
            kind: m.kind,
            provider: m.provider,
            target: null,
            upstream_model: m.id,
            org_id: null,
          })),
          queryOf<ListQuery>(request),
        );
      },
    },
    {
      method: 'GET',
      path: '/models',
      options: {
        id: 'listModels',
        tags,
        description:
          "Models to send to the proxy: the managed/<name> entries the named org (or project) may use, or without one those of every org the caller's token can see and use models in (each with its org_id), then every provider's models",
        plugins: { ...authenticated, ...docs(400, 401, 403, 404) },
        validate: { query: S.modelsQuery },
        response: { schema: pageSchema(S.modelSchema, 'ModelList') },
      },
      handler: (request) => {
        const q = queryOf<OrgQuery & { source?: 'provider' | 'managed' }>(request);
        return models.list(principalOf(request), { orgId: q.org_id, projectId: q.project_id, source: q.source }, q);
      },
    },
    {
      method: 'GET',
      path: '/inference/targets',
      options: {
        id: 'listInferenceTargets',
        tags,
        description: "An org's inference targets (inference:admin), or without org_id the system's (system administrator), newest first",
        plugins: { ...authenticated, ...docs(400, 401, 403, 404) },
        validate: { query: S.orgQuery },
        response: { schema: pageSchema(S.targetSchema, 'InferenceTargetList') },
      },
      handler: async (request) => {
        const q = queryOf<OrgQuery>(request);
        const page = await targets.list(principalOf(request), q.org_id ?? null, q);
        return { ...page, data: page.data.map(S.toTarget) };
      },
    },
    {
      method: 'POST',
      path: '/inference/targets',
      options: {
        id: 'createInferenceTarget',
        tags,
        description: 'Create an inference target: a named upstream with its wire kind, base URL, credential secret name, allowed models and timeouts',
        plugins: { ...authenticated, ...docs(400, 401, 403, 404, 409, 422) },
        validate: { payload: S.createTarget },
        response: { status: { 201: S.targetSchema } },
      },
      handler: async (request, h) => h.response(S.toTarget(await targets.create(principalOf(request), payloadOf<TargetInput>(request)))).code(201),
    },
    {
      method: 'GET',
      path: '/inference/targets/{target_id}',
      options: {
        id: 'getInferenceTarget',
        tags,
        description: 'One inference target',
        plugins: { ...authenticated, ...docs(400, 401, 404) },
        validate: { params: S.targetParams },
        response: { schema: S.targetSchema },
      },
      handler: async (request) => S.toTarget(await targets.get(principalOf(request), paramsOf(request).target_id)),
    },
    {
      method: 'PATCH',
      path: '/inference/targets/{target_id}',
      options: {
        id: 'updateInferenceTarget',
        tags,
        description: "Change a target's kind, base URL, credential secret, allowed models or timeouts (the name stays)",
        plugins: { ...authenticated, ...docs(400, 401, 404, 422) },
        validate: { params: S.targetParams, payload: S.updateTarget },
        response: { schema: S.targetSchema },
      },
      handler: async (request) => S.toTarget(await targets.update(principalOf(request), paramsOf(request).target_id, payloadOf<TargetChanges>(request))),
    },
    {
      method: 'DELETE',
      path: '/inference/targets/{target_id}',
      options: {
        id: 'deleteInferenceTarget',
        tags,
        description: 'Delete a target; 409 while managed models map to it',
        plugins: { ...authenticated, ...docs(204, 400, 401, 404, 409) },
        validate: { params: S.targetParams },
      },
      handler: async (request, h) => {
        await targets.remove(principalOf(request), paramsOf(request).target_id);
        return h.response().code(204);
      },
    },
    {
      method: 'GET',
      path: '/inference/managed-models',
      options: {
        id: 'listManagedModels',
        tags,
        description: "The managed models the caller's org (or project) may use, with the system's; without an org, the system's",
        plugins: { ...authenticated, ...docs(400, 401, 403, 404) },
        validate: { query: S.managedListQuery },
        response: { schema: pageSchema(S.managedModelSchema, 'ManagedModelList') },
      },
      handler: async (request) => {
        const q = queryOf<OrgQuery>(request);
        const page = await managed.list(principalOf(request), { orgId: q.org_id, projectId: q.project_id }, q);
        return { ...page, data: page.data.map(S.toManagedModel) };
      },
    },
    {
      method: 'POST',
      path: '/inference/managed-models',
      options: {
        id: 'createManagedModel',
        tags,
        description: 'Add managed/<name>: a target and its upstream model id, with prices (USD per million tokens) and optionally the projects that may use it',
        plugins: { ...authenticated, ...docs(400, 401, 403, 404, 409, 422) },
        validate: { payload: S.createManagedModel },
        response: { status: { 201: S.managedModelSchema } },
      },
      handler: async (request, h) => {
        const input = payloadOf<ManagedModelInput>(request);
        const created = await managed.create(principalOf(request), { ...input, name: input.name.replace(/^managed\//, '') });
        return h.response(S.toManagedModel(created)).code(201);
      },
    },
    {
      method: 'DELETE',
      path: '/inference/managed-models/{canonical_model_id*}',
      options: {
        id: 'deleteManagedModel',
        tags,
        description: "Delete managed/<name> from the org's catalog (org_id) or the system's",
        plugins: { ...authenticated, ...docs(204, 400, 401, 403, 404) },
        validate: { params: S.managedParams, query: S.managedDeleteQuery },
      },
      handler: async (request, h) => {
        await managed.remove(principalOf(request), paramsOf(request).canonical_model_id, queryOf<{ org_id?: string }>(request).org_id ?? null);
        return h.response().code(204);
      },
    },
  ];
}

function inMemoryPage<T>(all: T[], { limit, offset }: Pick<ListQuery, 'limit' | 'offset'>) {
  const data = all.slice(offset, offset + limit);
  return { data, pagination: { limit, offset, count: data.length, total: all.length, has_more: offset + data.length < all.length } };
}
