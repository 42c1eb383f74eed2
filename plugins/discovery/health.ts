import type { ServerRoute } from '@hapi/hapi';
import Joi from 'joi';
import type { DependencyContainer } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import { VERSION } from '../../core/version.ts';
import { docs } from '../../core/http/schemas.ts';

/** A load balancer wants an answer, not a hung probe: past this the database counts as down. */
const HEALTH_DB_TIMEOUT_MS = 2_000;

const healthSchema = Joi.object({
  status: Joi.string().valid('ok', 'unavailable').required(),
  version: Joi.string().required(),
  roles: Joi.array().items(Joi.string()).required(),
  database: Joi.object({ ok: Joi.boolean().required(), latency_ms: Joi.number().allow(null) }).required(),
  uptime_seconds: Joi.number().required(),
}).label('Health');

const livenessSchema = Joi.object({ status: Joi.string().valid('ok').required(), roles: Joi.array().items(Joi.string()).required() }).label('Liveness');

/**
 * The probes every svc process answers, whatever its roles (on the api server, or on the kernel's
 * RoleListener in a process without the api role): `/health` is readiness (200 while the database answers, else 503),
 * `/health/live` is liveness (200 while the process serves requests at all, whatever the database
 * does, so an orchestrator that restarts the process does not restart every replica during a
 * database outage).
 */
export function healthRoutes(container: DependencyContainer): ServerRoute[] {
  const config = container.resolve(Tokens.Config);
  const db = container.resolve(Tokens.ControlDb); // answers while reads pile up on the main pool
  const startedAt = container.resolve(Tokens.StartedAt);
  return [
    {
      method: 'GET',
      path: '/health',
      options: {
        id: 'getHealth',
        auth: false,
        description: 'Health of this instance and its database (503 when the database does not answer); the readiness probe',
        tags: ['api', 'discovery'],
        plugins: docs(408),
        response: { status: { 200: healthSchema, 503: healthSchema } },
      },
      handler: async (_request, h) => {
        const t0 = performance.now();
        const ok = await Promise.race([
          db.raw('SELECT 1').then(
            () => true,
            () => false,
          ),
          new Promise<boolean>((resolve) => setTimeout(resolve, HEALTH_DB_TIMEOUT_MS, false).unref()),
        ]);
        const body = {
          status: ok ? 'ok' : 'unavailable',
          version: VERSION,
          roles: config.roles,
          database: { ok, latency_ms: ok ? Math.round((performance.now() - t0) * 100) / 100 : null },
          uptime_seconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
        };
        return h.response(body).code(ok ? 200 : 503);
      },
    },
    {
      method: 'GET',
      path: '/health/live',
      options: {
        id: 'getLiveness',
        auth: false,
        description: 'The process is up and serving (the database is not asked); the liveness probe',
        tags: ['api', 'discovery'],
        plugins: docs(408),
        response: { schema: livenessSchema },
      },
      handler: () => ({ status: 'ok', roles: config.roles }),
    },
  ];
}
