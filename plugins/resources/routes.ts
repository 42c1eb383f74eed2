import Boom from '@hapi/boom';
import { payloadFailed as jsonPayloadFailed } from '../../core/http/server.ts';
import type { Lifecycle, Request, ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import type { DocFilters } from './repository.ts';
import { DocService, MAX_DOC_BYTES, type DocUpdate, type NewDoc } from './service.ts';
import type { MutationContext } from './events.ts';
import * as S from './schemas.ts';

const tags = ['api', 'docs'];

/** Room for 1 MiB of text written out as JSON (escapes included). */
const DOC_PAYLOAD_MAX = 4 * 1024 * 1024;

const payloadFailed: Lifecycle.Method = (request, h, err) => {
  if (Boom.isBoom(err) && err.output.statusCode === 413) {
    throw Boom.entityTooLarge(`request body is larger than ${DOC_PAYLOAD_MAX} bytes; document content is limited to ${MAX_DOC_BYTES} bytes (1 MiB)`);
  }
  return jsonPayloadFailed(request, h, err);
};

const payload = { maxBytes: DOC_PAYLOAD_MAX, allow: 'application/json', failAction: payloadFailed };

const mutation = (request: Request, mutationId?: string): MutationContext => ({
  principal: principalOf(request),
  mutationId: mutationId ?? null,
  requestId: request.info.id,
});

/** Org documents under /orgs/{org_id}/docs (docs/resources.md). */
export function docRoutes(container: DependencyContainer): ServerRoute[] {
  const service = container.resolve(DocService);
  const base = '/orgs/{org_id}/docs';
  const one = `${base}/{doc_id}`;

  return [
    {
      method: 'GET',
      path: base,
      options: {
        id: 'listDocs',
        tags,
        description: "The org's documents with their current version (no content), newest first; `path` filters by prefix",
        plugins: { ...requires('orgdocs:read', 'org'), ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: S.listQuery },
        response: { schema: pageSchema(S.docSummarySchema, 'DocList') },
      },
      handler: async (request) => {
        const page = await service.list(paramsOf(request).org_id, queryOf<DocFilters>(request));
        return { ...page, data: page.data.map(S.toDoc) };
      },
    },
    {
      method: 'POST',
      path: base,
      options: {
        id: 'createDoc',
        tags,
        description: 'Create a document (version 1); a path is unique among the live documents of the org (409)',
        plugins: { ...requires('orgdocs:write', 'org'), ...docs(400, 401, 403, 404, 409, 413, 422) },
        payload,
        validate: { params: S.orgParams, payload: S.createSchema },
        response: { status: { 201: S.docSchema } },
      },
      handler: async (request, h) => {
        const input = payloadOf<NewDoc>(request);
        return h.response(S.toDoc(await service.create(paramsOf(request).org_id, input, mutation(request, input.mutation_id)))).code(201);
      },
    },
    {
      method: 'GET',
      path: `${base}/by-path`,
      options: {
        id: 'getDocByPath',
        tags,
        description: 'The live document at a path, with its content (current version, or `version`)',
        plugins: { ...requires('orgdocs:read', 'org'), ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: S.byPathQuery },
        response: { schema: S.docSchema },
      },
      handler: async (request) => {
        const { path, version } = queryOf<{ path: string; version?: number }>(request);
        return S.toDoc(await service.getByPath(paramsOf(request).org_id, path, version));
      },
    },
    {
      method: 'GET',
      path: one,
      options: {
        id: 'getDoc',
        tags,
        description: 'One document with its content (current version, or `version`); a deleted one shows deleted: true',
        plugins: { ...requires('orgdocs:read', 'org'), ...docs(400, 401, 403, 404) },
        validate: { params: S.docParams, query: S.getQuery },
        response: { schema: S.docSchema },
      },
      handler: async (request) => {
        const { org_id, doc_id } = paramsOf(request);
        return S.toDoc(await service.get(org_id, doc_id, queryOf<{ version?: number }>(request).version));
      },
    },
    {
      method: 'PUT',
      path: one,
      options: {
        id: 'writeDoc',
        tags,
        description: 'Write a new version; with expected_version, refused (409) unless that is the current one',
        plugins: { ...requires('orgdocs:write', 'org'), ...docs(400, 401, 403, 404, 409, 413) },
        payload,
        validate: { params: S.docParams, payload: S.updateSchema },
        response: { schema: S.docSchema },
      },
      handler: async (request) => {
        const { org_id, doc_id } = paramsOf(request);
        const input = payloadOf<DocUpdate>(request);
        return S.toDoc(await service.update(org_id, doc_id, input, mutation(request, input.mutation_id)));
      },
    },
    {
      method: 'DELETE',
      path: one,
      options: {
        id: 'deleteDoc',
        tags,
        description: 'Delete the document (soft: its versions stay readable by id, its path is free again)',
        plugins: { ...requires('orgdocs:write', 'org'), ...docs(204, 400, 401, 403, 404, 409) },
        validate: { params: S.docParams, query: S.deleteQuery },
      },
      handler: async (request, h) => {
        const { org_id, doc_id } = paramsOf(request);
        const { expected_version, mutation_id } = queryOf<{ expected_version?: number; mutation_id?: string }>(request);
        await service.remove(org_id, doc_id, expected_version, mutation(request, mutation_id));
        return h.response().code(204);
      },
    },
    {
      method: 'GET',
      path: `${one}/versions`,
      options: {
        id: 'listDocVersions',
        tags,
        description: "The document's versions (no content), newest first",
        plugins: { ...requires('orgdocs:read', 'org'), ...docs(400, 401, 403, 404) },
        validate: { params: S.docParams, query: S.versionsQuery },
        response: { schema: pageSchema(S.versionSchema, 'DocVersionList') },
      },
      handler: (request) => service.versions(paramsOf(request).org_id, paramsOf(request).doc_id, queryOf<ListQuery>(request)),
    },
  ];
}
