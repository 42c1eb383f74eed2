// Request-level signature authentication: `Authorization: Nostr <base64 of a signed NIP-98 event>`.
// See docs/nostr.md for what the event must contain.
import { createHash, type Hash } from 'node:crypto';
import Boom from '@hapi/boom';
import type { Request } from '@hapi/hapi';
import { inject, injectable } from '../di.ts';
import { Tokens, type Clock } from '../tokens.ts';
import type { Config } from '../config/schema.ts';
import type { Db } from '../db/knex.ts';
import { HTTP_AUTH_EVENT_KIND, NostrEventError, parseEvent, tagValue, verifyEvent, type NostrEvent } from '../../domain/signatures/nostr.ts';
import type { Principal } from './principal.ts';

/** How far created_at may be from the server's clock, either way. */
export const REQUEST_WINDOW_SECONDS = 60;
const MAX_HEADER_CHARS = 16 * 1024;
const CLEANUP_EVERY_MS = 60_000;
const HEX64 = /^[0-9a-f]{64}$/;
const EMPTY_SHA256 = createHash('sha256').digest('hex');

const NOSTR_HEADER = /^Nostr +(\S+)$/i;

/** Whether an Authorization header uses the Nostr scheme (the scheme word decides). */
export const isNostrHeader = (header: string): boolean => /^Nostr(\s|$)/i.test(header.trim());

/** What authenticate leaves for the payload step: the body hash the event claims, and the hash of what came. */
export interface NostrArtifacts {
  nostrEvent: NostrEvent;
  payloadTag: string | undefined;
  body: { hash: Hash; bytes: number } | null;
}

/** 401 with an RFC 7235 challenge in the style of the Bearer scheme's. */
function rejected(message: string, code: 'invalid_request' | 'invalid_token'): Boom.Boom {
  const err = Boom.unauthorized(message);
  err.output.headers['WWW-Authenticate'] = `Nostr error="${code}", error_description="${message.replace(/["\\]/g, '')}"`;
  return err;
}

@injectable()
export class NostrRequestAuth {
  private lastCleanup = 0;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(Tokens.Clock) private readonly clock: Clock,
  ) {}

  /** The user whose registered key signed this request; throws a 401 Boom otherwise. */
  async authenticate(request: Request, header: string): Promise<{ credentials: { principal: Principal }; artifacts: NostrArtifacts }> {
    const event = this.decode(header);
    const now = this.clock.now().getTime();
    if (event.kind !== HTTP_AUTH_EVENT_KIND) throw rejected(`event kind must be ${HTTP_AUTH_EVENT_KIND}`, 'invalid_token');
    if (Math.abs(now / 1000 - event.created_at) > REQUEST_WINDOW_SECONDS) {
      throw rejected(`event created_at is more than ${REQUEST_WINDOW_SECONDS} seconds from the server time`, 'invalid_token');
    }
    if (!sameUrl(tagValue(event, 'u'), this.expectedUrl(request))) throw rejected('event u tag is not the URL of this request', 'invalid_token');
    if (tagValue(event, 'method')?.toUpperCase() !== request.method.toUpperCase()) {
      throw rejected('event method tag is not the method of this request', 'invalid_token');
    }
    const payloadTag = tagValue(event, 'payload');
    if (payloadTag !== undefined && !HEX64.test(payloadTag)) throw rejected('event payload tag must be a lower-case hex sha256', 'invalid_token');
    try {
      verifyEvent(event);
    } catch (e) {
      if (e instanceof NostrEventError) throw rejected(e.message, 'invalid_token');
      throw e;
    }
    const bodiless = request.method === 'get' || request.method === 'head';
    if (bodiless && payloadTag !== undefined && payloadTag !== EMPTY_SHA256) {
      throw rejected('payload hash does not match the request body', 'invalid_token');
    }
    const user = await this.db('user_nostr_keys as k')
      .join('users as u', 'u.id', 'k.user_id')
      .where('k.pubkey', event.pubkey)
      .first('u.id', 'u.email', 'u.is_admin');
    if (!user) throw rejected('no user has this key', 'invalid_token');
    await this.consume(event);

    // hapi reads the body after authentication; count its bytes as they stream past, then check them in payload().
    let body: NostrArtifacts['body'] = null;
    if (!bodiless) {
      const state = { hash: createHash('sha256'), bytes: 0 };
      request.events.on('peek', (chunk: Buffer | string) => {
        const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
        state.hash.update(bytes);
        state.bytes += bytes.length;
      });
      body = state;
    }
    const principal: Principal = {
      kind: 'user',
      id: user.id,
      email: user.email,
      isAdmin: user.is_admin,
      scope: null,
      roleCap: null,
      expiresAt: new Date((event.created_at + REQUEST_WINDOW_SECONDS) * 1000).toISOString(),
      permissions: null,
    };
    return { credentials: { principal }, artifacts: { nostrEvent: event, payloadTag, body } };
  }

  /** After hapi has read the body: it must hash to the event's payload tag (required when there is a body). */
  checkPayload(request: Request, artifacts: NostrArtifacts): void {
    if (!artifacts.body) return;
    const payload = request.payload as { pipe?: unknown } | null | undefined;
    if (payload && typeof payload.pipe === 'function') throw rejected('a signed request cannot stream its body to this route', 'invalid_token');
    const digest = artifacts.body.hash.digest('hex');
    if (artifacts.payloadTag !== undefined) {
      if (artifacts.payloadTag !== digest) throw rejected('payload hash does not match the request body', 'invalid_token');
    } else if (artifacts.body.bytes > 0) {
      throw rejected('a request with a body must sign its sha256 in a payload tag', 'invalid_token');
    }
  }

  private decode(header: string): NostrEvent {
    const match = NOSTR_HEADER.exec(header.trim());
    if (!match || match[1].length > MAX_HEADER_CHARS || !/^[A-Za-z0-9+/\-_]+={0,2}$/.test(match[1])) {
      throw rejected('malformed authorization header: expected Nostr <base64 event>', 'invalid_request');
    }
    let raw: unknown;
    try {
      raw = JSON.parse(Buffer.from(match[1], 'base64').toString('utf8'));
    } catch {
      throw rejected('malformed authorization header: the event is not base64 JSON', 'invalid_request');
    }
    try {
      return parseEvent(raw);
    } catch (e) {
      if (e instanceof NostrEventError) throw rejected(`malformed authorization header: ${e.message}`, 'invalid_request');
      throw e;
    }
  }

  /** The absolute URL the client must have signed: server.public_url when set, else the Host header. */
  private expectedUrl(request: Request): string {
    const pathAndQuery = request.url.pathname + request.url.search;
    const base = this.config.server.public_url?.replace(/\/+$/, '') ?? `${request.server.info.protocol}://${request.info.host}`;
    return base + pathAndQuery;
  }

  /** Each event id is accepted once; ids are kept until their event is too old to pass the time check. */
  private async consume(event: NostrEvent): Promise<void> {
    const expiresAt = new Date((event.created_at + REQUEST_WINDOW_SECONDS + 1) * 1000);
    const inserted = await this.db('nostr_seen_events').insert({ id: event.id, expires_at: expiresAt }).onConflict('id').ignore().returning('id');
    if (inserted.length === 0) throw rejected('this signed event was already used', 'invalid_token');
    const now = this.clock.now();
    if (now.getTime() - this.lastCleanup >= CLEANUP_EVERY_MS) {
      this.lastCleanup = now.getTime();
      this.db('nostr_seen_events')
        .where('expires_at', '<', now)
        .delete()
        .catch(() => undefined);
    }
  }
}

function sameUrl(signed: string | undefined, expected: string): boolean {
  if (!signed) return false;
  try {
    return new URL(signed).href === new URL(expected).href;
  } catch {
    return false;
  }
}
