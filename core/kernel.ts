import { mkdirSync } from 'node:fs';
import type { Server } from '@hapi/hapi';
import { container as rootContainer, type DependencyContainer } from './di.ts';
import type { Logger } from 'pino';
import type { Config } from './config/schema.ts';
import { Tokens, systemClock } from './tokens.ts';
import { shareConnectionsByRoute, routeShare } from './db/route-share.ts';
import { ACQUIRE_TIMEOUT_MS, createKnex, type Db } from './db/knex.ts';
import { migrate } from './db/migrate.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded.ts';
import { Sealer, loadMasterKey } from './crypto/sealer.ts';
import { createLogger, logDestination } from './logger.ts';
import { SigningKeys } from './auth/signing-keys.ts';
import { Access } from './auth/access.ts';
import { PermissionResolver } from './auth/resolver.ts';
import { MachineTokens } from './auth/machine-tokens.ts';
import { TokenService } from './auth/tokens.ts';
import { AUTH_CHANNEL, AuthCache } from './auth/cache.ts';
import { MEMO_CHANNEL, SharedMemos } from './db/shared-memos.ts';
import { listenAll } from './db/listen.ts';
import { Memberships } from './auth/memberships.ts';
import { AccessTargets } from './http/access.ts';
import { createServer } from './http/server.ts';
import { RoleListener } from './http/role-listener.ts';
import { noteOwnPort } from './http/address-guard.ts';
import { checkAdapterKinds, createAdapter, type AdapterDeps } from './adapters.ts';
import { Housekeeping, RoleServices, schedulerService } from './roles.ts';
import { SchedulerToken } from './ports/scheduler.ts';
import { VcsHostToken } from './ports/vcshost.ts';
import { ChatAppToken } from './ports/chatapp.ts';
import { declareDirectories } from './ports/directory.ts';
import { RuntimeToken } from './ports/runtime.ts';
import { DeployerToken } from './ports/environments.ts';
import { MailerToken } from './ports/mail.ts';
import { declareEventLog } from './ports/events.ts';
import { Metrics } from './metrics.ts';
import { WorkEngine } from './work/engine.ts';

/** How long ended work items stay (what the work engine's counts and a late status read see). */
const WORK_KEPT_MS = 7 * 24 * 3_600_000;
/** Dead letters stay longer, for whoever looks into why work failed for good; their domain recorded the failure too. */
const DEAD_WORK_KEPT_MS = 30 * 24 * 3_600_000;
import { measurePools } from './db/pool-metrics.ts';
import { measureRequests } from './http/request-metrics.ts';

export interface Kernel {
  config: Config;
  container: DependencyContainer;
  db: Db;
  databaseUrl: string;
  logger: Logger;
  /** Listening when the api role runs; initialized (plugins loaded, not listening) otherwise. */
  server: Server;
  /** Where this process listens: the API, or without the api role its RoleListener (probes, internal routes). */
  url: string;
  stop(): Promise<void>;
}

export interface KernelOptions {
  logger?: Logger;
  /** Registers services before the plugins load (embedding, tests): a plugin keeps what is already registered. */
  configure?: (container: DependencyContainer) => void;
}

export interface KernelParts {
  config: Config;
  db: Db;
  controlDb: Db;
  databaseUrl: string;
  logger: Logger;
  sealer: Sealer;
}

/** The container every process builds before its plugins load: config, pools, kernel services, the code host and chat adapters. */
export async function kernelContainer(parts: KernelParts): Promise<DependencyContainer> {
  const { config, db, databaseUrl, logger } = parts;
  const container = rootContainer.createChildContainer();
  container.registerInstance(Tokens.Config, config);
  container.registerInstance(Tokens.Db, db);
  container.registerInstance(Tokens.ControlDb, parts.controlDb);
  container.registerInstance(Tokens.DatabaseUrl, databaseUrl);
  container.registerInstance(Tokens.Logger, logger);
  container.registerInstance(Tokens.Sealer, parts.sealer);
  container.registerInstance(Tokens.Clock, systemClock);
  container.registerInstance(Tokens.StartedAt, new Date());
  const metrics = new Metrics({ processMetrics: true });
  container.registerInstance(Metrics, metrics);
  const work = { leaseMs: config.work.lease_seconds * 1000, pollMs: config.work.poll_ms };
  container.registerInstance(WorkEngine, new WorkEngine({ db, databaseUrl, logger, metrics, ...work }));
  declareDirectories(container);
  declareEventLog(container);
  for (const cls of [AuthCache, SharedMemos, SigningKeys, MachineTokens, TokenService, PermissionResolver, Access, AccessTargets, Memberships])
    container.registerSingleton(cls as never);
  const adapterDeps: AdapterDeps = { config, db, databaseUrl, logger };
  // Every role may talk to the code host and the chat app (inbound on api, pull requests and notices elsewhere).
  container.registerInstance(VcsHostToken, await createAdapter('vcshost', config.adapters.vcshost, adapterDeps));
  container.registerInstance(ChatAppToken, await createAdapter('chatapp', config.adapters.chatapp, adapterDeps));
  return container;
}

/**
 * Boot order: database (external or embedded) → migrations → container → signing keys →
 * HTTP server (the API with the api role, else the role listener) → orchestrator and worker roles. stop() undoes it in reverse.
 */
export async function startKernel(config: Config, opts: KernelOptions = {}): Promise<Kernel> {
  const logger = opts.logger ?? createLogger(config.log.level, logDestination(config.log.format));
  const undo: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const step of undo.reverse()) await step().catch((e) => logger.error({ err: e }, 'shutdown step failed'));
    undo.length = 0;
  };

  try {
    checkAdapterKinds(config.adapters);
    mkdirSync(config.data_dir, { recursive: true });
    const sealer = new Sealer(loadMasterKey(config.secrets.master_key, config.data_dir, config.env === 'production'));

    let databaseUrl = config.database.url;
    if (!databaseUrl) {
      const embedded: EmbeddedDatabase = await startEmbeddedPostgres(config.data_dir, config.database.embedded_port);
      undo.push(() => embedded.stop());
      databaseUrl = embedded.url;
      logger.info({ dataDir: embedded.pgDir }, 'embedded PostgreSQL started');
      for (const note of embedded.notes) logger.info(note);
    }
    // Migrations on a pool of their own, without the request pools' statement and lock timeouts.
    const migrator = createKnex(databaseUrl, 1, logger);
    const applied = await migrate(migrator, databaseUrl).finally(() => migrator.destroy());
    if (applied.length) logger.info({ migrations: applied }, 'migrations applied');
    const timeouts = { statementMs: config.database.statement_timeout_ms, lockMs: config.database.lock_timeout_ms };
    const db = createKnex(databaseUrl, config.database.pool_max, logger, timeouts);
    undo.push(() => db.destroy());
    shareConnectionsByRoute(db, routeShare(config.database.pool_max), ACQUIRE_TIMEOUT_MS);
    const controlDb = createKnex(databaseUrl, config.database.control_pool_max, logger, timeouts);
    undo.push(() => controlDb.destroy());

    const container = await kernelContainer({ config, db, controlDb, databaseUrl, logger, sealer });
    const metrics = container.resolve(Metrics);
    measurePools(metrics, { main: db, control: controlDb });
    // What the other processes say changed (who may do what, remembered values), on one connection.
    const authCache = container.resolve(AuthCache);
    const memos = container.resolve(SharedMemos);
    const kernelNotices = await listenAll(databaseUrl, { [AUTH_CHANNEL]: (p) => authCache.hear(p), [MEMO_CHANNEL]: (p) => memos.hear(p) }, logger);
    undo.push(() => kernelNotices.close());
    await container.resolve(SigningKeys).ensureActive();
    const adapterDeps: AdapterDeps = { config, db, databaseUrl, logger };
    opts.configure?.(container);
    // Where environments run; `configure` may register one (tests).
    if (!container.isRegistered(DeployerToken, true))
      container.registerInstance(DeployerToken, await createAdapter('deployer', config.adapters.deployer, adapterDeps));
    // Where mail goes out (invites); a config without adapters.mailer sends none.
    if (!container.isRegistered(MailerToken, true))
      container.registerInstance(MailerToken, await createAdapter('mailer', config.adapters.mailer ?? { use: 'none' }, adapterDeps));

    const roleServices = new RoleServices();
    container.registerInstance(RoleServices, roleServices);
    const housekeeping = new Housekeeping();
    container.registerInstance(Housekeeping, housekeeping);
    housekeeping.add(() =>
      container
        .resolve(WorkEngine)
        .prune(new Date(Date.now() - WORK_KEPT_MS), new Date(Date.now() - DEAD_WORK_KEPT_MS))
        .then(() => undefined),
    );
    if (config.roles.includes('orchestrator')) {
      const scheduler = await createAdapter('scheduler', config.adapters.scheduler, adapterDeps);
      container.registerInstance(SchedulerToken, scheduler);
      roleServices.add('orchestrator', schedulerService(housekeeping, scheduler));
    }
    // The worker role runs attempts on the configured runtime, unless `configure` registered one (the benchmark wraps it).
    if (config.roles.includes('worker') && !container.isRegistered(RuntimeToken, true)) {
      container.registerInstance(RuntimeToken, await createAdapter('runtime', config.adapters.runtime, adapterDeps));
    }

    // Plugins always load (they add the roles' background services); the api role serves the API,
    // any other process only the probes and the internal routes its roles add.
    const listener = config.roles.includes('api') ? null : new RoleListener(config);
    if (listener) {
      container.registerInstance(RoleListener, listener);
      measureRequests(listener.server, metrics);
    }
    const server = await createServer(container);
    if (listener) {
      await server.initialize();
      undo.push(() => server.stop({ timeout: config.server.shutdown_timeout_ms }));
      await listener.start();
      undo.push(() => listener.stop());
    } else {
      await server.start();
      undo.push(() => server.stop({ timeout: config.server.shutdown_timeout_ms }));
    }
    const url = listener?.url ?? server.info.uri;
    noteOwnPort(Number(new URL(url).port)); // the outbound policy refuses this port on this host's addresses (production)
    logger.info({ url, roles: config.roles }, listener ? 'svc listening (probes and internal routes only: no api role here)' : 'svc listening');
    for (const role of config.roles) {
      for (const service of roleServices.of(role)) {
        await service.start();
        undo.push(() => service.stop());
      }
    }
    return { config, container, db, databaseUrl, logger, server, url, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
