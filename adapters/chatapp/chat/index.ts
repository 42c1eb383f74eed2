/**
 * Chat-app port for Slack-compatible apps: event requests signed `v0=<HMAC-SHA256 of
 * "v0:<timestamp>:<body>">` with the app's signing secret, and `chat.postMessage` with a bot token.
 */
import Joi from 'joi';
import { hmacSha256Hex, sameSignature } from '../../../core/crypto/hmac.ts';
import { postJson } from '../../../core/http/outbound.ts';
import { HostApiError, headerOf, type InboundRequest, type Verification } from '../../../core/ports/integrations.ts';
import type { ChatApp, ChatDelivery, ChatMessage, PostedMessage } from '../../../core/ports/chatapp.ts';
import { defineAdapter } from '../../../core/sdk.ts';
import { readRequest } from './requests.ts';

type Options = {
  api_url: string;
  bot_token: string | null;
  timeout_ms: number;
  signature_header: string;
  timestamp_header: string;
};

/** A request signed longer ago than this (or this far in the future) is refused as a replay. */
const REPLAY_WINDOW_SECONDS = 5 * 60;
const SIGNATURE = /^v0=([0-9a-f]{64})$/i;
const HEADER_NAME = Joi.string().pattern(/^[A-Za-z0-9-]+$/);

const optionsSchema = Joi.object({
  api_url: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .default('https://slack.com/api')
    .description('Web API root; methods are POSTed to <api_url>/<method>.'),
  bot_token: Joi.string().allow(null).default(null).description('Bot token for messages whose caller brings none (SVC_ADAPTERS__CHATAPP__OPTIONS__BOT_TOKEN).'),
  timeout_ms: Joi.number().integer().min(100).default(30_000).description('How long an API call may take.'),
  signature_header: HEADER_NAME.default('X-Slack-Signature').description('Header with v0=<hex HMAC-SHA256>.'),
  timestamp_header: HEADER_NAME.default('X-Slack-Request-Timestamp').description('Header with the signing time, Unix seconds.'),
});

class ChatAppClient implements ChatApp {
  readonly name = 'chat';

  constructor(private readonly options: Options) {}

  verify(request: InboundRequest, signingSecret: string, now: Date): Verification {
    const { signature_header: sigHeader, timestamp_header: tsHeader } = this.options;
    const signature = headerOf(request, sigHeader)?.trim();
    const timestamp = headerOf(request, tsHeader)?.trim();
    if (!signature || !timestamp) return { ok: false, reason: `${sigHeader} and ${tsHeader} headers are required` };
    if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: `${tsHeader} must be Unix seconds` };
    if (Math.abs(now.getTime() / 1000 - Number(timestamp)) > REPLAY_WINDOW_SECONDS) {
      return { ok: false, reason: `${tsHeader} is more than ${REPLAY_WINDOW_SECONDS / 60} minutes from the server time (refused as a replay)` };
    }
    const match = SIGNATURE.exec(signature);
    if (!match) return { ok: false, reason: `${sigHeader} must be v0=<64 hex digits>` };
    const expected = hmacSha256Hex(signingSecret, Buffer.concat([Buffer.from(`v0:${timestamp}:`), request.body]));
    if (!sameSignature(match[1].toLowerCase(), expected))
      return { ok: false, reason: `${sigHeader} does not match the request signed with the signing secret` };
    return { ok: true };
  }

  normalize(request: InboundRequest): ChatDelivery {
    let body: unknown;
    try {
      body = JSON.parse(request.body.toString('utf8'));
    } catch {
      return { kind: 'invalid', message: 'the request body is not valid JSON' };
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) return { kind: 'invalid', message: 'the request body must be a JSON object' };
    return readRequest(body);
  }

  async notify(message: ChatMessage): Promise<PostedMessage> {
    const token = message.token ?? this.options.bot_token;
    if (!token) throw new HostApiError('no chat bot token: pass one or set adapters.chatapp.options.bot_token', 0);
    const { status, body } = await postJson({
      url: `${this.options.api_url.replace(/\/+$/, '')}/chat.postMessage`,
      headers: { authorization: `Bearer ${token}` },
      body: { channel: message.channel, text: message.message, ...(message.thread_ts ? { thread_ts: message.thread_ts } : {}) },
      timeoutMs: this.options.timeout_ms,
    });
    // The Web API answers 200 with ok:false for refusals (channel_not_found, not_in_channel, invalid_auth).
    const reply = body as { ok?: unknown; error?: unknown; channel?: unknown; ts?: unknown } | null;
    if (status !== 200 || reply?.ok !== true || typeof reply.ts !== 'string') {
      const reason = typeof reply?.error === 'string' ? reply.error : `HTTP ${status}`;
      throw new HostApiError(`posting to ${message.channel} failed: ${reason}`, status, body);
    }
    return { channel: typeof reply.channel === 'string' ? reply.channel : message.channel, ts: reply.ts };
  }
}

export default defineAdapter<ChatApp, Options>({
  kind: 'chatapp',
  name: 'chat',
  options: optionsSchema,
  create: (options) => new ChatAppClient(options),
});
