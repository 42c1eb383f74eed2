import { clientOf } from '../../core/http/local-client.ts';
import { paramsOf, queryOf } from '../../core/http/request.ts';
import Boom from '@hapi/boom';
import Joi from 'joi';
import type { Request, ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { authenticated, principalOf, systemAdmin } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { listQuerySchema, pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { SigningKeys } from '../../core/auth/signing-keys.ts';
import * as S from './schemas.ts';
import { Bootstrap, type BootstrapRequest } from './bootstrap.ts';
import { SshLogin } from './ssh-login.ts';
import { UserKeys } from './keys.ts';
import { Identity, type MintRequest } from './mint.ts';

const tags = ['api', 'auth'];

/**
 * The account's login keys are managed with an unscoped token only: a token minted into one org or
 * project could otherwise register a key, log in with it and come back with the whole account.
 */
function accountOwner(request: Request): string {
  const principal = principalOf(request);
  if (principal.scope) {
    throw Boom.forbidden(`a token scoped to ${principal.scope.type} ${principal.scope.id} cannot manage SSH keys; use a login token`);
  }
  return principal.id;
}

export function authRoutes(container: DependencyContainer): ServerRoute[] {
  const bootstrap = container.resolve(Bootstrap);
  const login = container.resolve(SshLogin);
  const keys = container.resolve(UserKeys);
  const identity = container.resolve(Identity);
  const signingKeys = container.resolve(SigningKeys);

  return [
    {
      method: 'GET',
      path: '/auth/bootstrap/status',
      options: {
        id: 'getBootstrapStatus',
        auth: false,
        tags,
        description: 'Whether the first administrator can be created now, and how',
        plugins: docs(429),
        response: { schema: S.bootstrapStatus },
      },
      handler: () => bootstrap.status(),
    },
    {
      method: 'POST',
      path: '/auth/bootstrap',
      options: {
        id: 'bootstrapAdministrator',
        auth: false,
        tags,
        description:
          'Create the first administrator and return a token; without SVC_BOOTSTRAP_TOKEN only clients on the server host (loopback, not through a proxy) may',
        plugins: docs(400, 401, 403, 409),
        validate: { payload: S.bootstrapRequest },
        response: { status: { 201: S.tokenResponse } },
      },
      handler: async (request, h) => {
        return h.response(await bootstrap.run(request.payload as BootstrapRequest, clientOf(request))).code(201);
      },
    },
    {
      method: 'POST',
      path: '/auth/challenge',
      options: {
        id: 'startSshLogin',
        auth: false,
        tags,
        description: 'Start key-signature login: a nonce to sign with ssh-keygen -Y sign -n svc-auth',
        plugins: docs(400),
        validate: { payload: S.challengeRequest },
        response: { schema: S.challengeResponse },
      },
      handler: (request) => login.challenge((request.payload as { email: string }).email),
    },
    {
      method: 'POST',
      path: '/auth/verify',
      options: {
        id: 'finishSshLogin',
        auth: false,
        tags,
        description: 'Finish key-signature login with the signed nonce; returns a token',
        plugins: docs(400, 401),
        validate: { payload: S.verifyRequest },
        response: { schema: S.tokenResponse },
      },
      handler: (request) => {
        const { challenge_id, signature, ttl_days } = request.payload as { challenge_id: string; signature: string; ttl_days?: number };
        return login.verify(challenge_id, signature, ttl_days);
      },
    },
    {
      method: 'GET',
      path: '/auth/me',
      options: {
        id: 'getMe',
        tags,
        description: 'The caller: account, token scope, and the orgs and projects it belongs to (within the token scope)',
        plugins: { ...authenticated, ...docs(401, 403) },
        response: { schema: S.meResponse },
      },
      handler: (request) => identity.me(principalOf(request)),
    },
    {
      method: 'POST',
      path: '/auth/keys',
      options: {
        id: 'addSshKey',
        tags,
        description: 'Register an SSH public key on your own account (not with an org- or project-scoped token)',
        plugins: { ...authenticated, ...docs(400, 401, 403, 409) },
        validate: { payload: S.keyRequest },
        response: { status: { 201: S.keyResponse } },
      },
      handler: async (request, h) => {
        const { public_key, label } = request.payload as { public_key: string; label?: string };
        return h.response(await keys.add(accountOwner(request), public_key, label ?? null)).code(201);
      },
    },
    {
      method: 'GET',
      path: '/auth/keys',
      options: {
        id: 'listSshKeys',
        tags,
        description: 'Your registered SSH public keys (not with a scoped token)',
        plugins: { ...authenticated, ...docs(400, 401, 403) },
        validate: { query: listQuerySchema },
        response: { schema: pageSchema(S.keyResponse, 'PublicKeyList') },
      },
      handler: (request) => keys.list(accountOwner(request), queryOf<ListQuery>(request)),
    },
    {
      method: 'DELETE',
      path: '/auth/keys/{key_id}',
      options: {
        id: 'deleteSshKey',
        tags,
        description: 'Remove one of your SSH public keys (not with a scoped token)',
        plugins: { ...authenticated, ...docs(204, 400, 401, 403, 404) },
        validate: { params: Joi.object({ key_id: S.keyId.required() }) },
      },
      handler: async (request, h) => {
        await keys.remove(accountOwner(request), paramsOf(request).key_id);
        return h.response().code(204);
      },
    },
    {
      method: 'POST',
      path: '/auth/mint',
      options: {
        id: 'mintToken',
        tags,
        description: 'Mint a token for a user in an org or project scope (system administrator); creates the user and membership if needed',
        plugins: { ...systemAdmin, ...docs(400, 401, 403, 404) },
        validate: { payload: S.mintRequest },
        response: { status: { 201: S.mintResponse } },
      },
      handler: async (request, h) => h.response(await identity.mint(request.payload as MintRequest)).code(201),
    },
    {
      method: 'POST',
      path: '/auth/signing-keys/rotate',
      options: {
        id: 'rotateSigningKey',
        tags,
        description: 'Start signing with a new key; earlier keys keep verifying their tokens (system administrator)',
        plugins: { ...systemAdmin, ...docs(401, 403) },
        response: { schema: Joi.object({ kid: Joi.string().required() }).label('RotatedKey') },
      },
      handler: async () => ({ kid: await signingKeys.rotate() }),
    },
  ];
}
