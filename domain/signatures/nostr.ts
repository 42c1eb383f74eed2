// Nostr events (NIP-01) and their BIP-340 Schnorr signatures over secp256k1.
import { createHash } from 'node:crypto';
import { schnorr } from '@noble/curves/secp256k1.js';

export interface NostrEvent {
  id: string;
  pubkey: string;
  created_at: number;
  kind: number;
  tags: string[][];
  content: string;
  sig: string;
}

/** Kind of the event that answers a login challenge (NIP-42's client-authentication kind). */
export const LOGIN_EVENT_KIND = 22242;
/** Kind of a request-signature event (NIP-98 HTTP auth). */
export const HTTP_AUTH_EVENT_KIND = 27235;

const HEX64 = /^[0-9a-f]{64}$/;
const HEX128 = /^[0-9a-f]{128}$/;

/** Its message is a short sentence that is safe to show to API clients. */
export class NostrEventError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NostrEventError';
  }
}

export const isHexPubkey = (value: unknown): value is string => typeof value === 'string' && HEX64.test(value);

/** NIP-01: the id is sha256 of the UTF-8 JSON array [0, pubkey, created_at, kind, tags, content]. */
export function eventId(event: Omit<NostrEvent, 'id' | 'sig'>): string {
  const serialized = JSON.stringify([0, event.pubkey, event.created_at, event.kind, event.tags, event.content]);
  return createHash('sha256').update(serialized, 'utf8').digest('hex');
}

/** Checks the shape of untrusted input; answers it as a NostrEvent or throws NostrEventError. */
export function parseEvent(raw: unknown): NostrEvent {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new NostrEventError('event must be a JSON object');
  const e = raw as Record<string, unknown>;
  if (typeof e.id !== 'string' || !HEX64.test(e.id)) throw new NostrEventError('event id must be 64 lower-case hex characters');
  if (!isHexPubkey(e.pubkey)) throw new NostrEventError('event pubkey must be 64 lower-case hex characters');
  if (typeof e.sig !== 'string' || !HEX128.test(e.sig)) throw new NostrEventError('event sig must be 128 lower-case hex characters');
  if (!Number.isSafeInteger(e.created_at) || (e.created_at as number) < 0) throw new NostrEventError('event created_at must be a unix time in seconds');
  if (!Number.isSafeInteger(e.kind) || (e.kind as number) < 0 || (e.kind as number) > 65535)
    throw new NostrEventError('event kind must be an integer 0 to 65535');
  if (typeof e.content !== 'string') throw new NostrEventError('event content must be a string');
  if (!Array.isArray(e.tags) || !e.tags.every((t) => Array.isArray(t) && t.every((v) => typeof v === 'string'))) {
    throw new NostrEventError('event tags must be an array of arrays of strings');
  }
  return {
    id: e.id,
    pubkey: e.pubkey,
    created_at: e.created_at as number,
    kind: e.kind as number,
    tags: e.tags as string[][],
    content: e.content,
    sig: e.sig,
  };
}

/** The id must be the hash of the event and the signature a valid BIP-340 signature of the id by pubkey. */
export function verifyEvent(event: NostrEvent): void {
  if (eventId(event) !== event.id) throw new NostrEventError('event id is not the hash of the event');
  let valid = false;
  try {
    valid = schnorr.verify(Buffer.from(event.sig, 'hex'), Buffer.from(event.id, 'hex'), Buffer.from(event.pubkey, 'hex'));
  } catch {
    valid = false;
  }
  if (!valid) throw new NostrEventError('event signature does not verify');
}

/** The first value of the first tag with this name. */
export const tagValue = (event: NostrEvent, name: string): string | undefined => event.tags.find((t) => t[0] === name)?.[1];

/** Whether 64 hex characters are the x coordinate of a secp256k1 point (a key someone can sign with). */
export function isOnCurve(pubkeyHex: string): boolean {
  if (!isHexPubkey(pubkeyHex)) return false;
  try {
    schnorr.utils.lift_x(BigInt(`0x${pubkeyHex}`));
    return true;
  } catch {
    return false;
  }
}
