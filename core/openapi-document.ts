import { randomBytes } from 'node:crypto';
import type { Server } from '@hapi/hapi';
import type { Config } from './config/schema.ts';
import { createKnex } from './db/knex.ts';
import { Sealer } from './crypto/sealer.ts';
import { createLogger } from './logger.ts';
import { kernelContainer } from './kernel.ts';
import { createServer } from './http/server.ts';
import { OPENAPI_PATH } from './http/openapi.ts';
import { Housekeeping, RoleServices } from './roles.ts';

/** A database address nothing answers: building the routes never queries, so none is opened. */
const NO_DATABASE = 'postgres://offline.invalid:1/none';

/** The api server of the config's plugins, built without a database or a listening socket; `close` releases it. */
export async function offlineApiServer(config: Config): Promise<{ server: Server; close(): Promise<void> }> {
  const logger = createLogger('silent');
  const db = createKnex(NO_DATABASE, 1, logger);
  try {
    // No request limits: their buckets are in the database.
    const limits = { ...config.limits, requests: { ...config.limits.requests, enabled: false } };
    const apiOnly = { ...config, roles: ['api'], limits } as Config;
    const container = await kernelContainer({ config: apiOnly, db, controlDb: db, databaseUrl: NO_DATABASE, logger, sealer: new Sealer(randomBytes(32)) });
    container.registerInstance(RoleServices, new RoleServices());
    container.registerInstance(Housekeeping, new Housekeeping());
    return { server: await createServer(container), close: () => db.destroy() };
  } catch (e) {
    await db.destroy();
    throw e;
  }
}

/**
 * The OpenAPI document of the API the config's plugins serve, built without a database or a
 * listening socket (the console's build generates its client types from it).
 */
export async function openApiDocument(config: Config): Promise<Record<string, unknown>> {
  const { server, close } = await offlineApiServer(config);
  try {
    const res = await server.inject({ method: 'GET', url: OPENAPI_PATH });
    if (res.statusCode !== 200) throw new Error(`the OpenAPI document could not be built: ${res.statusCode} ${res.payload}`);
    return JSON.parse(res.payload) as Record<string, unknown>;
  } finally {
    await close();
  }
}
