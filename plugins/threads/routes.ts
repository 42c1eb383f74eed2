import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import type { MessageFilters } from './repository.ts';
import { ThreadService, type MessageInput, type ThreadInput } from './service.ts';
import * as S from './schemas.ts';

const tags = ['api', 'threads'];

/** Reading needs threads:read; creating threads and posting needs chat:write (job tokens hold both). */
export function threadRoutes(container: DependencyContainer): ServerRoute[] {
  const service = container.resolve(ThreadService);
  const base = '/projects/{project_id}/threads';
  const one = `${base}/{thread_id}`;
  return [
    {
      method: 'POST',
      path: base,
      options: {
        id: 'createThread',
        tags,
        description: 'Create a thread; with a key the project already has, that thread comes back (200) unless the title differs (409)',
        plugins: { ...requires('chat:write', 'project'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.projectParams, payload: S.createThread },
        response: { status: { 200: S.threadSchema, 201: S.threadSchema } },
      },
      handler: async (request, h) => {
        const { thread, created } = await service.create(principalOf(request), paramsOf(request).project_id, payloadOf<ThreadInput>(request));
        return h.response(thread).code(created ? 201 : 200);
      },
    },
    {
      method: 'POST',
      path: `${base}/ensure`,
      options: {
        id: 'ensureThread',
        tags,
        description: 'Find or create the thread with this key (200 either way; 409 when it exists with another title)',
        plugins: { ...requires('chat:write', 'project'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.projectParams, payload: S.ensureThread },
        response: { schema: S.threadSchema },
      },
      handler: async (request) => (await service.create(principalOf(request), paramsOf(request).project_id, payloadOf<ThreadInput>(request))).thread,
    },
    {
      method: 'GET',
      path: base,
      options: {
        id: 'listThreads',
        tags,
        description: "The project's threads, newest first (filters key, job_id)",
        plugins: { ...requires('threads:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.projectParams, query: S.listThreadsQuery },
        response: { schema: pageSchema(S.threadSchema, 'ThreadList') },
      },
      handler: (request) => service.list(paramsOf(request).project_id, queryOf<ListQuery & { key?: string; job_id?: string }>(request)),
    },
    {
      method: 'GET',
      path: one,
      options: {
        id: 'getThread',
        tags,
        description: 'One thread',
        plugins: { ...requires('threads:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.threadParams },
        response: { schema: S.threadSchema },
      },
      handler: (request) => service.get(paramsOf(request).project_id, paramsOf(request).thread_id),
    },
    {
      method: 'GET',
      path: `${one}/messages`,
      options: {
        id: 'listThreadMessages',
        tags,
        description: "The thread's messages, oldest first (seq order); page with limit/offset or with after (the last seq read) as a cursor",
        plugins: { ...requires('threads:read', 'project'), ...docs(400, 401, 403, 404) },
        validate: { params: S.threadParams, query: S.listMessagesQuery },
        response: { schema: pageSchema(S.messageSchema, 'ThreadMessagePage') },
      },
      handler: (request) => service.messages(paramsOf(request).project_id, paramsOf(request).thread_id, queryOf<MessageFilters>(request)),
    },
    {
      method: 'POST',
      path: `${one}/messages`,
      options: {
        id: 'postThreadMessage',
        tags,
        description: 'Post a message as the caller (a job token posts as its job); coordination threads take status, directive, question and update',
        plugins: { ...requires('chat:write', 'project'), ...docs(400, 401, 403, 404, 422) },
        validate: { params: S.threadParams, payload: S.postMessage },
        response: { status: { 201: S.messageSchema } },
      },
      handler: async (request, h) =>
        h
          .response(await service.post(principalOf(request), paramsOf(request).project_id, paramsOf(request).thread_id, payloadOf<MessageInput>(request)))
          .code(201),
    },
  ];
}
