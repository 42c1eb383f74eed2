import type { Request, ResponseToolkit, ServerRoute } from '@hapi/hapi';
import Joi from 'joi';
import { docs } from '../../core/http/schemas.ts';
import { paramsOf } from '../../core/http/request.ts';
import type { InboundRequest } from '../../core/ports/integrations.ts';
import type { InboundDeliveries, Outcome } from './inbound.ts';
import * as S from './schemas.ts';

const tags = ['api', 'integrations'];
/** The code host caps deliveries at 25 MB; chat events are small. */
const VCSHOST_MAX_BYTES = 25 * 1024 * 1024;
const CHAT_MAX_BYTES = 1024 * 1024;

/**
 * Signatures cover the exact bytes sent, so these routes take the body unparsed and the adapter
 * reads it; providers send JSON or forms.
 */
const rawBody = (maxBytes: number) => ({ parse: false, output: 'data' as const, maxBytes, allow: ['application/json', 'application/x-www-form-urlencoded'] });

const inboundOf = (request: Request): InboundRequest => ({
  headers: request.headers as InboundRequest['headers'],
  body: Buffer.isBuffer(request.payload) ? request.payload : Buffer.alloc(0),
});

const reply = (h: ResponseToolkit, outcome: Outcome) => h.response(outcome.body).code(outcome.status);

const eventResponses = { 200: S.eventSchema, 201: S.eventSchema, 202: S.ignoredSchema };

/** Called by the providers, not by users: no bearer token; each request is signed instead. */
export function inboundRoutes(inbound: InboundDeliveries): ServerRoute[] {
  const chatRoute = (id: string, path: string, description: string): ServerRoute => ({
    method: 'POST',
    path,
    options: {
      id,
      auth: false,
      tags,
      description,
      notes:
        'Signed with the system secret CHATAPP_SIGNING_SECRET (X-Slack-Signature, X-Slack-Request-Timestamp; 5-minute replay window). Answers the url_verification handshake; stores message and app_mention events in the project the team and channel are routed to (routes of the org the team is bound to). A message carrying "bind <code>" binds the team to the org that asked for the code (200 {bound: true}, or 202 when the code does not bind) and is not stored.',
      payload: rawBody(CHAT_MAX_BYTES),
      plugins: docs(400, 401, 404, 413),
      response: { status: { ...eventResponses, 200: Joi.alternatives().try(S.challengeSchema, S.boundSchema, S.eventSchema) } },
    },
    handler: async (request, h) => reply(h, await inbound.chat(inboundOf(request), request.info.id)),
  });

  return [
    {
      method: 'POST',
      path: '/integrations/vcshost/events/{project_id}',
      options: {
        id: 'receiveVcsHostEvent',
        auth: false,
        tags,
        description: 'Code-host webhook: push and pull_request deliveries become vcshost.* events of the project',
        notes:
          "X-Hub-Signature-256 must be sha256=<hex HMAC-SHA256 of the body> with the project's secret VCSHOST_WEBHOOK_SECRET. 201 stored; 200 with the stored event for a push already stored (same repository, ref, before and after: a redelivery or a replay under another delivery id) or a pull_request redelivery (same X-GitHub-Delivery); 202 another kind of event (not stored).",
        payload: rawBody(VCSHOST_MAX_BYTES),
        validate: { params: S.projectParams },
        plugins: docs(400, 401, 413),
        response: { status: eventResponses },
      },
      handler: async (request, h) => reply(h, await inbound.vcshost(paramsOf(request).project_id, inboundOf(request), request.info.id)),
    },
    chatRoute(
      'receiveChatAppEvent',
      '/gateway/providers/chatapp/webhook',
      'Chat-app events: message and app_mention become chatapp.* events of the routed project',
    ),
    chatRoute('receiveChatAppEventLegacy', '/integrations/chatapp/events', 'Chat-app events (legacy path of /gateway/providers/chatapp/webhook)'),
  ];
}
