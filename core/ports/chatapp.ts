import type { InjectionToken } from 'tsyringe';
import type { InboundEvent, InboundRequest, Verification } from './integrations.ts';

/**
 * What a verified chat-app request means: the URL-verification handshake, an event of a team's
 * channel to route, something svc does not store, or a body it cannot read.
 */
export type ChatDelivery =
  | { kind: 'url_verification'; challenge: string }
  | { kind: 'event'; team_id: string; channel: string | null; event: InboundEvent }
  | { kind: 'ignored'; reason: string }
  | { kind: 'invalid'; message: string };

export interface ChatMessage {
  channel: string;
  message: string;
  /** Reply in this thread. */
  thread_ts?: string;
  /** The caller's bot token; the adapter's configured token otherwise. */
  token?: string;
}

export interface PostedMessage {
  channel: string;
  ts: string;
}

/** A team chat app: verifies and reads its event requests, and posts messages through its API. */
export interface ChatApp {
  readonly name: string;
  /** Signature and timestamp: a request signed too long before `now` (or after) is a replay. */
  verify(request: InboundRequest, signingSecret: string, now: Date): Verification;
  /** Only for a verified request. */
  normalize(request: InboundRequest): ChatDelivery;
  /** Throws HostApiError when the app refuses or does not answer. */
  notify(message: ChatMessage): Promise<PostedMessage>;
}

export const ChatAppToken = Symbol('ChatApp') as InjectionToken<ChatApp>;
