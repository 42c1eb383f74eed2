import Boom from '@hapi/boom';
import type { Request, ResponseToolkit, ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { grantOf, principalOf, requires } from '../../core/http/access.ts';
import { payloadFailed } from '../../core/http/server.ts';
import { docs } from '../../core/http/schemas.ts';
import { payloadOf } from '../../core/http/request.ts';
import type { InferenceConfig } from '../../core/config/schema.ts';
import type { TargetPointer } from '../../core/auth/access.ts';
import { InferenceGateway, type ProxyReply } from './proxy.ts';
import { type Scopes } from './scopes.ts';
import type { ChatRequest } from './providers/types.ts';
import * as S from './schemas.ts';

/** The access target of the proxy: whom the call is for (a job token's project, a scoped token's scope, or the X-Svc-Project / X-Svc-Org header). */
export const CALLER_TARGET = 'inference.caller';

const header = (request: Request, name: string): string | undefined => {
  const value = request.headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
};

export function callerPointer(scopes: Scopes) {
  return (request: Request): TargetPointer => {
    const pointer = scopes.pointer(principalOf(request), { projectId: header(request, 'x-svc-project'), orgId: header(request, 'x-svc-org') });
    if (!pointer) throw Boom.badRequest('say whom the call is for: an X-Svc-Org or X-Svc-Project header (job and scoped tokens carry their own)');
    return pointer;
  };
}

/** POST /inference/v1/chat/completions: the chat-completions-compatible proxy (docs/inference.md). */
export function proxyRoutes(container: DependencyContainer, settings: InferenceConfig): ServerRoute[] {
  const proxy = container.resolve(InferenceGateway);
  return [
    {
      method: 'POST',
      path: '/inference/v1/chat/completions',
      options: {
        id: 'createChatCompletion',
        tags: ['api', 'inference'],
        description:
          'Chat completions through an inference target: managed/<name>, <target>/<model> or a model a target allows; stream: true answers server-sent events as they arrive',
        notes: 'Upstream errors come back with the upstream status and body (credentials masked); no answer in time is 504, a broken upstream 502.',
        plugins: { ...requires('inference:use', CALLER_TARGET), ...docs(400, 401, 403, 404, 413, 422) },
        payload: { maxBytes: settings.max_request_bytes, allow: 'application/json', failAction: payloadFailed },
        validate: { payload: S.chatRequest },
        // Not validated: the body is the upstream's (passed through), and streams are not JSON.
        response: { status: { 200: S.chatResponse }, sample: 0 },
      },
      handler: async (request, h) => {
        const grant = grantOf(request);
        const reply = await proxy.complete(
          principalOf(request),
          { orgId: grant.orgId, projectId: grant.projectId },
          payloadOf<ChatRequest>(request),
          abortOnClose(request),
        );
        return replyWith(h, reply);
      },
    },
  ];
}

/** Aborted when the client drops the connection before the answer has gone out. */
export function abortOnClose(request: Request): AbortSignal {
  const gone = new AbortController();
  // 'close' on the response fires when the answer has gone out or the client dropped the connection.
  request.raw.res.once('close', () => {
    if (!request.raw.res.writableFinished) gone.abort();
  });
  return gone.signal;
}

export function replyWith(h: ResponseToolkit, reply: ProxyReply) {
  if (reply.kind === 'stream') {
    return h
      .response(reply.stream)
      .type('text/event-stream')
      .header('cache-control', 'no-cache')
      .header('content-encoding', 'identity')
      .header('x-accel-buffering', 'no');
  }
  const response = h.response(reply.body as object).code(reply.status);
  for (const [name, value] of Object.entries(reply.headers)) response.header(name, value);
  return response;
}
