import Boom from '@hapi/boom';
import Joi from 'joi';
import YAML from 'yaml';
import type { DomainPlugin } from '../../core/http/plugins.ts';
import { Tokens } from '../../core/tokens.ts';
import { SigningKeys } from '../../core/auth/signing-keys.ts';
import { RoleListener } from '../../core/http/role-listener.ts';
import { docs } from '../../core/http/schemas.ts';
import { healthRoutes } from './health.ts';
import { metricsRoute } from './metrics.ts';
import { describeTags } from '../../core/http/openapi.ts';

const jwksSchema = Joi.object({ keys: Joi.array().items(Joi.object().unknown(true)).required() }).label('JWKS');

const authConfigSchema = Joi.object({
  issuer: Joi.string().required(),
  jwks_uri: Joi.string().required(),
  algorithms: Joi.array().items(Joi.string()).required(),
  identity_provider_url: Joi.string().allow(null).required(),
  sso: Joi.object({
    enabled: Joi.boolean().required().description('POST /auth/exchange accepts identity-provider tokens'),
    exchange_path: Joi.string().required(),
    issuer: Joi.string().allow(null).required(),
    audience: Joi.string().required(),
    algorithms: Joi.array().items(Joi.string()).required(),
  })
    .required()
    .label('SsoConfig'),
  login_methods: Joi.array().items(Joi.string()).required(),
  ssh_signature_namespace: Joi.string().required(),
  token_ttl_days: Joi.object({ default: Joi.number(), min: Joi.number(), max: Joi.number() }).required(),
}).label('AuthConfig');

/** Public, unauthenticated routes that tell clients what this server is and how to talk to it. */
export const plugin: DomainPlugin = {
  name: 'discovery',
  register(server, { container }) {
    describeTags(server, {
      discovery:
        'What this server is and how to talk to it: health probes, Prometheus metrics, the keys that verify its tokens (JWKS), the sign-in settings clients need, and this document. No token needed.',
    });
    const config = container.resolve(Tokens.Config);
    const keys = container.resolve(SigningKeys);

    const everyRole = [...healthRoutes(container), metricsRoute(container)];
    // A process without the api role answers the probes and scrapes too, on its RoleListener.
    if (container.isRegistered(RoleListener)) container.resolve(RoleListener).server.route(everyRole);
    server.route([
      ...everyRole,
      {
        method: 'GET',
        path: '/.well-known/jwks.json',
        options: {
          id: 'getJwks',
          auth: false,
          description: 'Public keys that verify tokens this service issues',
          tags: ['api', 'discovery'],
          plugins: docs(429),
          response: { schema: jwksSchema },
        },
        handler: () => keys.jwks(),
      },
      {
        method: 'GET',
        path: '/auth/config',
        options: {
          id: 'getAuthConfig',
          auth: false,
          description: 'Identity-provider address and token settings for clients',
          tags: ['api', 'discovery'],
          plugins: docs(429),
          response: { schema: authConfigSchema },
        },
        handler: (request) => ({
          issuer: config.auth.issuer,
          jwks_uri: `${config.server.public_url ?? `${request.server.info.protocol}://${request.info.host}`}/.well-known/jwks.json`,
          algorithms: ['RS256'],
          identity_provider_url: config.auth.identity_provider_url,
          sso: {
            enabled: Boolean(config.auth.sso.secret && config.auth.sso.issuer),
            exchange_path: '/auth/exchange',
            issuer: config.auth.sso.issuer || null,
            audience: config.auth.sso.audience,
            algorithms: ['HS256'],
          },
          login_methods: ['ssh-signature', 'bootstrap', 'mint', ...(config.auth.sso.secret && config.auth.sso.issuer ? ['web-sso'] : [])],
          ssh_signature_namespace: 'svc-auth',
          token_ttl_days: { default: config.auth.token_ttl_days, min: 1, max: 90 },
        }),
      },
      {
        method: 'GET',
        path: '/openapi.yaml',
        options: {
          id: 'getOpenApiYaml',
          auth: false,
          description: 'The OpenAPI document as YAML',
          tags: ['api', 'discovery'],
          plugins: {
            'hapi-swagger': {
              responses: { ...docs(429)['hapi-swagger'].responses, 200: { description: 'application/yaml', schema: Joi.string().label('OpenApiYaml') } },
            },
          },
        },
        handler: async (request, h) => {
          const res = await request.server.inject({ method: 'GET', url: '/openapi.json' });
          if (res.statusCode !== 200) throw Boom.internal('the OpenAPI document could not be built');
          return h.response(YAML.stringify(JSON.parse(res.payload))).type('application/yaml');
        },
      },
    ]);
  },
};
