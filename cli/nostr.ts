// Nostr keys for `svc auth login --nostr`: a hex secret key in a private file, and NIP-01 event signing.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { schnorr } from '@noble/curves/secp256k1.js';
import { CliError } from './errors.ts';
import { eventId, HTTP_AUTH_EVENT_KIND, LOGIN_EVENT_KIND, type NostrEvent } from '../domain/signatures/nostr.ts';

export type SignedEvent = NostrEvent;

const toHex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/** Reads a 64-hex-character secret key from a file that only its owner can read (like an SSH key). */
export async function readSecretKey(path: string): Promise<Uint8Array> {
  let text: string;
  let mode: number;
  try {
    mode = (await stat(path)).mode;
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read nostr key file ${path}: ${(error as Error).message}`);
  }
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
    throw new CliError(`nostr key file ${path} is accessible by others (mode ${(mode & 0o777).toString(8)}); chmod 600 it`);
  }
  const hex = text.trim();
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new CliError(`nostr key file ${path} must hold a 64-character hex secret key`);
  const secret = Uint8Array.from(Buffer.from(hex, 'hex'));
  try {
    schnorr.getPublicKey(secret);
  } catch {
    throw new CliError(`nostr key file ${path} does not hold a valid secp256k1 secret key`);
  }
  return secret;
}

/** The x-only public key of a secret key, as 64 hex characters. */
export const nostrPublicKey = (secret: Uint8Array): string => toHex(schnorr.getPublicKey(secret));

/** A NIP-01 event: id = sha256 of [0, pubkey, created_at, kind, tags, content], sig = BIP-340 over the id. */
export function signEvent(secret: Uint8Array, event: { kind: number; tags?: string[][]; content?: string; created_at?: number }): SignedEvent {
  const unsigned = {
    pubkey: nostrPublicKey(secret),
    created_at: event.created_at ?? Math.floor(Date.now() / 1000),
    kind: event.kind,
    tags: event.tags ?? [],
    content: event.content ?? '',
  };
  const id = eventId(unsigned);
  return { id, ...unsigned, sig: toHex(schnorr.sign(Buffer.from(id, 'hex'), secret)) };
}

/** `Authorization: Nostr <base64 event>` for one request (NIP-98 style, kind 27235). */
export function nostrAuthorization(secret: Uint8Array, method: string, url: string, body?: string | Buffer, createdAt?: number): string {
  const tags = [
    ['u', url],
    ['method', method.toUpperCase()],
  ];
  if (body !== undefined && body.length > 0) tags.push(['payload', createHash('sha256').update(body).digest('hex')]);
  const event = signEvent(secret, { kind: HTTP_AUTH_EVENT_KIND, tags, created_at: createdAt });
  return `Nostr ${Buffer.from(JSON.stringify(event)).toString('base64')}`;
}

// The login event kind is the client's own constant: a server cannot make the client sign another kind.

export interface NostrChallenge {
  challenge_id: string;
  nonce: string;
}

/** The verify body for a challenge: a login event whose content is the nonce. */
export function answerChallenge(secret: Uint8Array, challenge: NostrChallenge, ttlDays?: number) {
  const event = signEvent(secret, { kind: LOGIN_EVENT_KIND, content: challenge.nonce });
  return { challenge_id: challenge.challenge_id, event, ttl_days: ttlDays };
}
