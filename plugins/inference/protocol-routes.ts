import Boom from '@hapi/boom';
import type { Request, ResponseToolkit, Server, ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { grantOf, principalOf, requires } from '../../core/http/access.ts';
import { payloadFailed } from '../../core/http/server.ts';
import { docs } from '../../core/http/schemas.ts';
import type { InferenceConfig } from '../../core/config/schema.ts';
import { InferenceGateway } from './proxy.ts';
import { CALLER_TARGET, abortOnClose, replyWith } from './proxy-routes.ts';
import { anthropicProtocol } from './protocols/anthropic.ts';
import { responsesProtocol } from './protocols/responses.ts';
import { geminiProtocol } from './protocols/gemini.ts';
import type { ClientProtocol, ClientProtocolName, ProtocolCall } from './protocols/types.ts';
import * as S from './protocol-schemas.ts';

const PROTOCOLS: Partial<Record<ClientProtocolName, ClientProtocol>> = { anthropic: anthropicProtocol, responses: responsesProtocol, gemini: geminiProtocol };

/** Paths whose callers (coding CLIs) send their key in their provider's header: the job token is accepted there too. */
const KEY_HEADER_PATHS = /^\/inference\/(v1\/messages|v1\/responses|v1beta\/models\/)/;

/**
 * Coding CLIs send the key the way their provider wants it: `x-api-key` (Claude Code's
 * ANTHROPIC_API_KEY), `x-goog-api-key` or `?key=` (Gemini). On the protocol routes only, such a key
 * is taken as the bearer token (an Authorization header, when sent too, wins), and `?key=` is
 * dropped from the URL so it is never logged.
 */
export function acceptProviderKeyHeaders(server: Server): void {
  server.ext('onRequest', (request, h) => {
    if (!KEY_HEADER_PATHS.test(request.path)) return h.continue;
    const query = request.query as Record<string, unknown>;
    const fromQuery = typeof query.key === 'string' ? query.key : undefined;
    if (fromQuery !== undefined) {
      const url = new URL(request.url.href);
      url.searchParams.delete('key');
      request.setUrl(`${url.pathname}${url.search}`);
    }
    const key = [request.headers['x-api-key'], request.headers['x-goog-api-key'], fromQuery].find((v) => typeof v === 'string' && v !== '');
    if (!request.headers.authorization && key) request.headers.authorization = `Bearer ${key}`;
    return h.continue;
  });
  // Every error of a protocol route (auth, validation, refusal, upstream failure) in the caller's protocol shape.
  server.ext(
    'onPreResponse',
    (request, h) => {
      const response = request.response;
      const name = (request.route.settings.app as { protocol?: ClientProtocolName } | undefined)?.protocol;
      const protocol = name ? PROTOCOLS[name] : undefined;
      if (!protocol || !Boom.isBoom(response)) return h.continue;
      response.output.payload = protocol.errorBody(response.output.statusCode, response.message) as Boom.Payload;
      return h.continue;
    },
    { sandbox: 'plugin' },
  );
}

/** Runs one call of a protocol route through the gateway, for the caller the access check found. */
async function run(gateway: InferenceGateway, request: Request, h: ResponseToolkit, protocol: ClientProtocol, call: ProtocolCall) {
  const grant = grantOf(request);
  const reply = await gateway.call(principalOf(request), { orgId: grant.orgId, projectId: grant.projectId }, protocol, call, abortOnClose(request));
  return replyWith(h, reply);
}

/** The protocol routes: each coding CLI's own wire format, to any target (docs/inference.md, "Protocols"). */
export function protocolRoutes(container: DependencyContainer, settings: InferenceConfig): ServerRoute[] {
  const gateway = container.resolve(InferenceGateway);
  const options = (protocol: ClientProtocolName, description: string, validate: object, answer: object) => ({
    tags: ['api', 'inference'],
    description,
    notes:
      'Authenticated by a token with inference:use (a job token: also as x-api-key, x-goog-api-key or ?key=). Errors come in the protocol\u2019s own shape; a job whose budget is spent is refused (403) and its attempt ended BUDGET_EXCEEDED.',
    app: { protocol },
    plugins: { ...requires('inference:use', CALLER_TARGET), ...docs(400, 401, 403, 404, 413) },
    payload: { maxBytes: settings.max_request_bytes, allow: 'application/json', failAction: payloadFailed },
    validate,
    response: { status: { 200: answer }, sample: 0 },
  });
  return [
    {
      // Claude Code checks that ANTHROPIC_BASE_URL answers (HEAD); GET routes answer HEAD too.
      method: 'GET',
      path: '/inference',
      options: {
        id: 'getInferenceGateway',
        auth: false,
        tags: ['api', 'inference'],
        description: 'The gateway base URL: answers so clients can check it is there',
        plugins: docs(429),
        response: { status: { 200: S.gatewayInfo } },
      },
      handler: () => ({ gateway: 'svc inference', protocols: ['chat', 'anthropic', 'responses', 'gemini'] }),
    },
    {
      method: 'POST',
      path: '/inference/v1/messages',
      options: {
        id: 'createMessage',
        ...options(
          'anthropic',
          'Anthropic Messages through any target (ANTHROPIC_BASE_URL=<server>/inference); stream: true answers its event stream',
          {
            payload: S.messagesRequest,
          },
          S.messagesResponse,
        ),
        handler: (request: Request, h: ResponseToolkit) => {
          const body = request.payload as Record<string, unknown>;
          const beta = request.headers['anthropic-beta'];
          return run(gateway, request, h, anthropicProtocol, {
            model: String(body.model),
            body,
            stream: body.stream === true,
            forward: typeof beta === 'string' ? { 'anthropic-beta': beta } : {},
          });
        },
      },
    },
    {
      method: 'POST',
      path: '/inference/v1/messages/count_tokens',
      options: {
        id: 'countMessageTokens',
        ...options(
          'anthropic',
          "Anthropic's token counting: an Anthropic target counts; for others the gateway estimates (estimated: true). Not metered",
          {
            payload: S.countTokensRequest,
          },
          S.countTokensResponse,
        ),
        handler: async (request: Request, h: ResponseToolkit) => {
          const body = request.payload as Record<string, unknown>;
          const grant = grantOf(request);
          const beta = request.headers['anthropic-beta'];
          const forward: Record<string, string> = typeof beta === 'string' ? { 'anthropic-beta': beta } : {};
          const call: ProtocolCall = { model: String(body.model), body, stream: false, forward };
          return replyWith(h, await gateway.countTokens({ orgId: grant.orgId, projectId: grant.projectId }, call, abortOnClose(request)));
        },
      },
    },
    {
      method: 'POST',
      path: '/inference/v1/responses',
      options: {
        id: 'createResponse',
        ...options(
          'responses',
          'OpenAI Responses through any target, translated through chat completions; stream: true answers its event stream',
          {
            payload: S.responsesRequest,
          },
          S.responsesResponse,
        ),
        handler: (request: Request, h: ResponseToolkit) => {
          const body = request.payload as Record<string, unknown>;
          return run(gateway, request, h, responsesProtocol, { model: String(body.model), body, stream: body.stream === true });
        },
      },
    },
    {
      // Gemini clients call <base>/v1beta/models/<model>:generateContent (or :streamGenerateContent?alt=sse); the model may hold a slash (managed/<name>).
      method: 'POST',
      path: '/inference/v1beta/models/{call*}',
      options: {
        id: 'generateContent',
        ...options(
          'gemini',
          'Gemini generateContent and streamGenerateContent (server-sent events) through any target, translated through chat completions; countTokens estimated',
          {
            payload: S.geminiRequest,
          },
          S.geminiResponse,
        ),
        handler: async (request: Request, h: ResponseToolkit) => {
          const target = decodeURIComponent(String(request.params.call ?? ''));
          const colon = target.lastIndexOf(':');
          const method = colon > 0 ? target.slice(colon + 1) : '';
          const body = request.payload as Record<string, unknown>;
          if (method === 'countTokens') {
            const grant = grantOf(request);
            return replyWith(
              h,
              await gateway.estimateGeminiTokens({ orgId: grant.orgId, projectId: grant.projectId }, { model: target.slice(0, colon), body, stream: false }),
            );
          }
          if (method !== 'generateContent' && method !== 'streamGenerateContent')
            throw Boom.notFound(`${target || 'the path'}: expected models/<model>:generateContent, :streamGenerateContent or :countTokens`);
          return run(gateway, request, h, geminiProtocol, { model: target.slice(0, colon), body, stream: method === 'streamGenerateContent' });
        },
      },
    },
    {
      // Codex first asks for the Responses WebSocket transport; a 426 makes it use HTTP and server-sent events at once.
      method: 'GET',
      path: '/inference/v1/responses',
      options: {
        auth: false,
        // Not an API operation (it never succeeds): left out of the API document.
        tags: ['inference'],
        description: 'Not served: the Responses WebSocket transport (426: use POST with server-sent events)',
        handler: (_request: Request, h: ResponseToolkit) =>
          h
            .response(
              responsesProtocol.errorBody(
                426,
                'the Responses WebSocket transport is not served here: POST /inference/v1/responses (stream: true for server-sent events)',
              ) as object,
            )
            .code(426)
            .header('connection', 'close'),
      },
    },
  ];
}
