import { createHash } from 'node:crypto';
import Joi from 'joi';
import type { ResponseToolkit, ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import { docs, projectId } from '../../core/http/schemas.ts';
import { payloadOf, queryOf } from '../../core/http/request.ts';
import { sameSignature } from '../../core/crypto/hmac.ts';
import { NotFound } from '../../core/errors.ts';
import { ProjectDirectoryToken } from '../../core/ports/directory.ts';
import { RegistryTokens, parseScopes } from './registry-tokens.ts';

const tags = ['api', 'registry'];
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** The Docker token protocol's 401: the registry client shows `details`. */
const unauthorized = (h: ResponseToolkit, message: string) =>
  h
    .response({ errors: [{ code: 'UNAUTHORIZED', message }] })
    .code(401)
    .header('www-authenticate', 'Basic realm="svc registry"');

function basicPassword(header: string | undefined): string | null {
  const m = /^Basic\s+(\S+)$/i.exec(header ?? '');
  if (!m) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const at = decoded.indexOf(':');
  return at < 0 ? null : decoded.slice(at + 1);
}

const tokenAnswer = Joi.object({
  token: Joi.string().required(),
  access_token: Joi.string().required(),
  expires_in: Joi.number().integer().required(),
  issued_at: Joi.string().required(),
}).label('RegistryToken');

/**
 * The native registry's token server: GET /registry/token (the Docker token protocol, Basic auth
 * with a grant) and POST /internal/registry/token (workers and deployers, SVC_INTERNAL_API_KEY).
 */
export function tokenRoutes(container: DependencyContainer): ServerRoute[] {
  const tokens = container.resolve(RegistryTokens);
  const config = container.resolve(Tokens.Config);
  const projects = container.resolve(ProjectDirectoryToken);

  return [
    {
      method: 'GET',
      path: '/registry/token',
      options: {
        id: 'getRegistryToken',
        auth: false,
        tags,
        description:
          "Token endpoint of the native registry (its auth.token.realm): Basic auth whose password is a grant from POST /internal/registry/token; the token carries the requested actions on the grant's project's repositories only",
        plugins: docs(400, 401),
        validate: {
          query: Joi.object({
            service: Joi.string().required(),
            scope: Joi.array().items(Joi.string()).single().description('repository:<name>:<actions>, once or more'),
            account: Joi.string(),
            client_id: Joi.string(),
            offline_token: Joi.boolean(),
          }),
        },
        response: { status: { 200: tokenAnswer } },
      },
      handler: async (request, h) => {
        const q = queryOf<{ service: string; scope?: string[] }>(request);
        if (q.service !== config.builds.token.service) return unauthorized(h, `unknown service ${q.service}`);
        const password = basicPassword(request.headers.authorization as string | undefined);
        const grant = password ? await tokens.verifyGrant(password) : null;
        if (!grant) return unauthorized(h, 'a valid svc registry grant is required as the Basic password');
        const scopes = (q.scope ?? []).flatMap((s) => s.split(' '));
        const issued = await tokens.registryToken(grant.projectId, tokens.allowed(grant, parseScopes(scopes)));
        return { token: issued.token, access_token: issued.token, expires_in: issued.expires_in, issued_at: issued.issued_at };
      },
    },
    {
      method: 'POST',
      path: '/internal/registry/token',
      options: {
        id: 'createRegistryGrant',
        auth: false,
        tags,
        description:
          "A short-lived registry JWT for a project's repository (push and pull), and a grant to log in with (username, password) — for workers and deployers; authenticated with SVC_INTERNAL_API_KEY (Authorization: Bearer)",
        plugins: docs(400, 401, 404),
        validate: {
          payload: Joi.object({
            project_id: projectId.required(),
            service: Joi.string()
              .pattern(/^[a-z0-9][a-z0-9_.-]{0,62}$/)
              .required()
              .description('the service whose repository the token is for'),
            actions: Joi.array().items(Joi.string().valid('pull', 'push')).min(1).unique().default(['pull', 'push']),
          }).label('InternalRegistryTokenRequest'),
        },
        response: {
          schema: Joi.object({
            token: Joi.string().required(),
            expires_in: Joi.number().integer().required(),
            repository: Joi.string().required(),
            registry: Joi.string().allow(null).required(),
            username: Joi.string().required(),
            password: Joi.string().required(),
          }).label('InternalRegistryToken'),
        },
      },
      handler: async (request, h) => {
        const key = config.builds.internal_api_key;
        const presented = /^Bearer\s+(\S+)$/i.exec(String(request.headers.authorization ?? ''))?.[1];
        // Hashes first, so the comparison neither leaks the key's length nor where it differs.
        if (!key || !presented || !sameSignature(sha256(presented), sha256(key))) return unauthorized(h, 'SVC_INTERNAL_API_KEY required');
        const body = payloadOf<{ project_id: string; service: string; actions: ('pull' | 'push')[] }>(request);
        const project = await projects.byId(body.project_id);
        if (!project || project.deleted) throw new NotFound(`project ${body.project_id} not found`);
        const repository = `${project.slug}/${body.service}`;
        const issued = await tokens.registryToken(project.id, [{ type: 'repository', name: repository, actions: body.actions }]);
        const grant = await tokens.grant(project.id, project.slug, body.actions);
        return {
          token: issued.token,
          expires_in: issued.expires_in,
          repository,
          registry: config.builds.native_registry,
          username: tokens.username,
          password: grant,
        };
      },
    },
  ];
}
