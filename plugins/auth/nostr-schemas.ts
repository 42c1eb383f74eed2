import Joi from 'joi';
import { emailSchema } from '../../core/http/schemas.ts';
import { timestamp } from '../../core/http/schemas.ts';
import { isOnCurve } from '../../domain/signatures/nostr.ts';
import { challengeId, keyId, ttlDays } from './schemas.ts';

const hex64 = Joi.string().pattern(/^[0-9a-f]{64}$/, '64 lower-case hex characters');

/** Accepts either case; answers lower case. Must be the x coordinate of a secp256k1 point. */
export const nostrPubkey = Joi.string()
  .trim()
  .pattern(/^[0-9a-fA-F]{64}$/, '64 hex characters')
  .lowercase()
  .custom((value: string, helpers) => (isOnCurve(value) ? value : helpers.message({ custom: '{{#label}} is not a secp256k1 x-only public key' })))
  .description('hex x-only secp256k1 public key (BIP-340 / Nostr), 64 characters');

export const nostrKeyRequest = Joi.object({ public_key: nostrPubkey.required(), label: Joi.string().trim().max(200) }).label('NostrKeyRequest');

export const nostrKeyResponse = Joi.object({
  id: keyId.required(),
  type: Joi.string().valid('nostr').required(),
  pubkey: hex64.required(),
  label: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
}).label('NostrPublicKey');

export const nostrChallengeRequest = Joi.object({ email: emailSchema, pubkey: nostrPubkey }).xor('email', 'pubkey').label('NostrChallengeRequest');

export const nostrChallengeResponse = Joi.object({
  challenge_id: challengeId.required(),
  nonce: Joi.string().required().description('the content of the event to sign'),
  kind: Joi.number().integer().required().description('the kind of the event to sign (22242)'),
  expires_at: timestamp.required(),
}).label('NostrChallenge');

export const nostrEvent = Joi.object({
  id: hex64.required(),
  pubkey: hex64.required(),
  created_at: Joi.number().integer().min(0).strict().required(),
  kind: Joi.number().integer().min(0).max(65535).strict().required(),
  tags: Joi.array()
    .items(Joi.array().items(Joi.string().allow('').max(1024)).max(16))
    .max(64)
    .required(),
  content: Joi.string().allow('').max(1024).required(),
  sig: Joi.string()
    .pattern(/^[0-9a-f]{128}$/, '128 lower-case hex characters')
    .required(),
}).label('NostrEvent');

export const nostrVerifyRequest = Joi.object({
  challenge_id: challengeId.required(),
  event: nostrEvent.required().description('NIP-01 event of kind 22242 whose content is the nonce, signed by the key'),
  ttl_days: ttlDays,
}).label('NostrVerifyRequest');
