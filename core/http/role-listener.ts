import Hapi, { type Server, type ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { Tokens } from '../tokens.ts';
import { healthRoutes } from './health.ts';
import { validationFailed } from './server.ts';

/**
 * A process without the api role still listens, on `server.host` and `server.port`: for the probes
 * (`/health`, `/health/live`) that every role answers, and for the internal routes its roles add
 * (the worker's dispatch routes). Nothing of the API is served here.
 */
export class RoleListener {
  private readonly server: Server;

  constructor(container: DependencyContainer) {
    const config = container.resolve(Tokens.Config);
    this.server = Hapi.server({
      host: config.server.host,
      port: config.server.port,
      routes: { validate: { failAction: validationFailed, options: { abortEarly: false } }, payload: { maxBytes: 64 * 1024 } },
    });
    this.server.route(healthRoutes(container));
  }

  /** Adds internal routes; before start() only. */
  route(routes: ServerRoute[]): void {
    this.server.route(routes);
  }

  get url(): string {
    return this.server.info.uri;
  }

  async start(): Promise<void> {
    await this.server.start();
  }

  async stop(timeoutMs: number): Promise<void> {
    await this.server.stop({ timeout: timeoutMs });
  }
}
