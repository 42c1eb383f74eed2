import { createHmac } from 'node:crypto';
import { hmacSha256Hex } from '../../core/crypto/hmac.ts';

/** What a delivery carries: the event as the receiver sees it. */
export interface DeliveredEvent {
  id: string;
  type: string;
  org_id: string;
  /** null only for the test event of an org-wide subscription. */
  project_id: string | null;
  time: Date;
  data: Record<string, unknown>;
}

export const sourceOf = (orgId: string, projectId: string | null): string => `svc://orgs/${orgId}${projectId === null ? '' : `/projects/${projectId}`}`;

/** The CloudEvents 1.0 structured-mode body: the bytes that are signed and sent. */
export function envelope(event: DeliveredEvent): string {
  return JSON.stringify({
    specversion: '1.0',
    type: event.type,
    source: sourceOf(event.org_id, event.project_id),
    id: event.id,
    time: event.time.toISOString(),
    datacontenttype: 'application/json',
    data: event.data,
  });
}

const WHSEC = /^whsec_([A-Za-z0-9+/]+={0,2})$/;

/**
 * The Standard Webhooks HMAC key. Their secrets are `whsec_<base64 key>`; a subscription secret in
 * that form is used as such, any other secret's UTF-8 bytes are the key (a receiver's library then
 * takes `whsec_` + base64(secret)).
 */
export function standardWebhooksKey(secret: string): Buffer {
  const m = WHSEC.exec(secret);
  return m ? Buffer.from(m[1], 'base64') : Buffer.from(secret, 'utf8');
}

export interface SignedMessage {
  deliveryId: string;
  /** Stays the same across retries and replays of one event: receivers dedupe on it. */
  messageId: string;
  body: string;
  secret: string;
  sentAt: Date;
}

/** The headers of one attempt: both signature schemes over the same raw body. */
export function deliveryHeaders(m: SignedMessage): Record<string, string> {
  const timestamp = String(Math.floor(m.sentAt.getTime() / 1000));
  const standard = createHmac('sha256', standardWebhooksKey(m.secret)).update(`${m.messageId}.${timestamp}.${m.body}`).digest('base64');
  return {
    'content-type': 'application/cloudevents+json; charset=utf-8',
    'user-agent': 'svc-webhooks/1',
    'x-svc-signature-256': `sha256=${hmacSha256Hex(m.secret, m.body)}`,
    'x-svc-delivery': m.deliveryId,
    'webhook-id': m.messageId,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${standard}`,
  };
}
