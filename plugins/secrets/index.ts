import type { DomainPlugin } from '../../core/http/plugins.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { SecretRepository } from './repository.ts';
import { SecretService } from './service.ts';
import { SecretResolver } from './resolver.ts';
import { secretRoutes } from './routes.ts';

/** Secrets at project, org, user and system scope, sealed at rest, and their resolution for jobs. */
export const plugin: DomainPlugin = {
  name: 'secrets',
  dependencies: ['orgs', 'projects'],
  register(server, { container }) {
    container.registerSingleton(SecretRepository);
    container.registerSingleton(SecretService);
    container.registerSingleton(SecretResolver);
    if (!container.isRegistered(SecretResolverToken)) container.register(SecretResolverToken, { useToken: SecretResolver });
    server.route(secretRoutes(container));
  },
};
