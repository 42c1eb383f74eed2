import Boom from '@hapi/boom';
import Joi from 'joi';
import type { Request, ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { paramsOf, queryOf } from '../../core/http/request.ts';
import { authenticated, principalOf } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { listQuerySchema, pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { NostrKeys } from './nostr-keys.ts';
import type { NostrEvent } from '../../domain/signatures/nostr.ts';
import { keyId, tokenResponse } from './schemas.ts';
import * as N from './nostr-schemas.ts';
import { NostrLogin, unknownIdentityHandler, type ChallengeSubject } from './nostr-login.ts';

const tags = ['api', 'auth'];

/** Login keys are managed with an unscoped token only (as for SSH keys). */
function accountOwner(request: Request): string {
  const principal = principalOf(request);
  if (principal.scope) {
    throw Boom.forbidden(`a token scoped to ${principal.scope.type} ${principal.scope.id} cannot manage nostr keys; use a login token`);
  }
  return principal.id;
}

/** Nostr-style identity: hex public keys on the account and Schnorr challenge-response login (docs/nostr.md). */
export function nostrRoutes(container: DependencyContainer): ServerRoute[] {
  const login = container.resolve(NostrLogin);
  const keys = container.resolve(NostrKeys);

  return [
    {
      method: 'POST',
      path: '/auth/nostr/challenge',
      options: {
        id: 'startNostrLogin',
        auth: false,
        tags,
        description: 'Start Schnorr login for an e-mail or a public key: a nonce to sign as a kind-22242 Nostr event',
        plugins: docs(400),
        validate: { payload: N.nostrChallengeRequest },
        response: { schema: N.nostrChallengeResponse },
      },
      handler: (request) => login.challenge(request.payload as ChallengeSubject),
    },
    {
      method: 'POST',
      path: '/auth/nostr/verify',
      options: {
        id: 'finishNostrLogin',
        auth: false,
        tags,
        description: 'Finish Schnorr login with the signed event; returns a token',
        plugins: docs(400, 401),
        validate: { payload: N.nostrVerifyRequest },
        response: { schema: tokenResponse },
      },
      handler: (request) => {
        const { challenge_id, event, ttl_days } = request.payload as { challenge_id: string; event: NostrEvent; ttl_days?: number };
        return login.verify(challenge_id, event, unknownIdentityHandler(container), ttl_days);
      },
    },
    {
      method: 'POST',
      path: '/auth/nostr-keys',
      options: {
        id: 'addNostrKey',
        tags,
        description: 'Register a hex Nostr (secp256k1 x-only) public key on your own account (not with a scoped token)',
        plugins: { ...authenticated, ...docs(400, 401, 403, 409) },
        validate: { payload: N.nostrKeyRequest },
        response: { status: { 201: N.nostrKeyResponse } },
      },
      handler: async (request, h) => {
        const { public_key, label } = request.payload as { public_key: string; label?: string };
        return h.response(await keys.add(accountOwner(request), public_key, label ?? null)).code(201);
      },
    },
    {
      method: 'GET',
      path: '/auth/nostr-keys',
      options: {
        id: 'listNostrKeys',
        tags,
        description: 'Your registered Nostr public keys (not with a scoped token)',
        plugins: { ...authenticated, ...docs(400, 401, 403) },
        validate: { query: listQuerySchema },
        response: { schema: pageSchema(N.nostrKeyResponse, 'NostrPublicKeyList') },
      },
      handler: (request) => keys.list(accountOwner(request), queryOf<ListQuery>(request)),
    },
    {
      method: 'DELETE',
      path: '/auth/nostr-keys/{key_id}',
      options: {
        id: 'deleteNostrKey',
        tags,
        description: 'Remove one of your Nostr public keys (not with a scoped token)',
        plugins: { ...authenticated, ...docs(204, 400, 401, 403, 404) },
        validate: { params: Joi.object({ key_id: keyId.required() }) },
      },
      handler: async (request, h) => {
        await keys.remove(accountOwner(request), paramsOf(request).key_id);
        return h.response().code(204);
      },
    },
  ];
}
