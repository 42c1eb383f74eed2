import Boom from '@hapi/boom';
import Joi from 'joi';
import YAML from 'yaml';
import type { DomainPlugin } from '../../core/http/plugins.ts';
import { Tokens } from '../../core/tokens.ts';
import { SigningKeys } from '../../core/auth/signing-keys.ts';

/** A load balancer wants an answer, not a hung probe: past this the database counts as down. */
const HEALTH_DB_TIMEOUT_MS = 2_000;

const healthSchema = Joi.object({
  status: Joi.string().valid('ok', 'unavailable').required(),
  version: Joi.string().required(),
  roles: Joi.array().items(Joi.string()).required(),
  database: Joi.object({ ok: Joi.boolean().required(), latency_ms: Joi.number().allow(null) }).required(),
  uptime_seconds: Joi.number().required(),
}).label('Health');

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
  }).required().label('SsoConfig'),
  login_methods: Joi.array().items(Joi.string()).required(),
  ssh_signature_namespace: Joi.string().required(),
  token_ttl_days: Joi.object({ default: Joi.number(), min: Joi.number(), max: Joi.number() }).required(),
}).label('AuthConfig');

/** Public, unauthenticated routes that tell clients what this server is and how to talk to it. */
export const plugin: DomainPlugin = {
  name: 'discovery',
  register(server, { container }) {
    const config = container.resolve(Tokens.Config);
    const db = container.resolve(Tokens.ControlDb); // answers while reads pile up on the main pool
    const startedAt = container.resolve(Tokens.StartedAt);
    const keys = container.resolve(SigningKeys);

    server.route([
      {
        method: 'GET',
        path: '/health',
        options: {
          auth: false,
          description: 'Health of this instance and its database (503 when the database does not answer)',
          tags: ['api', 'discovery'],
          response: { status: { 200: healthSchema, 503: healthSchema } },
        },
        handler: async (_request, h) => {
          const t0 = performance.now();
          const ok = await Promise.race([
            db.raw('SELECT 1').then(() => true, () => false),
            new Promise<boolean>((resolve) => setTimeout(resolve, HEALTH_DB_TIMEOUT_MS, false).unref()),
          ]);
          const body = {
            status: ok ? 'ok' : 'unavailable',
            version: '0.1.0',
            roles: config.roles,
            database: { ok, latency_ms: ok ? Math.round((performance.now() - t0) * 100) / 100 : null },
            uptime_seconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
          };
          return h.response(body).code(ok ? 200 : 503);
        },
      },
      {
        method: 'GET',
        path: '/.well-known/jwks.json',
        options: { auth: false, description: 'Public keys that verify tokens this service issues', tags: ['api', 'discovery'], response: { schema: jwksSchema } },
        handler: () => keys.jwks(),
      },
      {
        method: 'GET',
        path: '/auth/config',
        options: { auth: false, description: 'Identity-provider address and token settings for clients', tags: ['api', 'discovery'], response: { schema: authConfigSchema } },
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
          auth: false, description: 'The OpenAPI document as YAML', tags: ['api', 'discovery'],
          plugins: { 'hapi-swagger': { responses: { 200: { description: 'application/yaml', schema: Joi.string().label('OpenApiYaml') } } } },
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
