import Hapi, { type Server } from '@hapi/hapi';
import type { Config } from '../config/schema.ts';
import { answerLateRequests, createListener, validationFailed } from './server.ts';

/**
 * A process without the api role still listens, on `server.host` and `server.port`, for what its
 * plugins put on this server: the probes (`/health`, `/health/live`, from the discovery plugin) that
 * every role answers, and internal routes such as the worker's dispatch routes. Nothing of the API.
 */
export class RoleListener {
  /** Plugins add their routes here while they register, before start(). */
  readonly server: Server;

  constructor(private readonly config: Config) {
    this.server = Hapi.server({
      host: config.server.host,
      port: config.server.port,
      listener: createListener(config.server.body_timeout_ms),
      routes: { validate: { failAction: validationFailed, options: { abortEarly: false } }, payload: { maxBytes: 64 * 1024, timeout: false } },
    });
    answerLateRequests(this.server, config.server.body_timeout_ms);
  }

  get url(): string {
    return this.server.info.uri;
  }

  async start(): Promise<void> {
    await this.server.start();
  }

  async stop(): Promise<void> {
    await this.server.stop({ timeout: this.config.server.shutdown_timeout_ms });
  }
}
