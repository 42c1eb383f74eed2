import type { DomainPlugin } from '../../core/http/plugins.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { SecretRepository } from './repository.ts';
import { SecretService } from './service.ts';
import { SecretResolver } from './resolver.ts';
import { secretRoutes } from './routes.ts';
import { describeTags } from '../../core/http/openapi.ts';

/** Secrets at project, org, user and system scope, sealed at rest, and their resolution for jobs. */
export const plugin: DomainPlugin = {
  name: 'secrets',
  dependencies: ['orgs', 'projects'],
  register(server, { container }) {
    describeTags(server, {
      secrets: 'Secrets of the system, an org, a project or a user, encrypted at rest. Values go in and are never returned: reads answer metadata only.',
    });
    container.registerSingleton(SecretRepository);
    container.registerSingleton(SecretService);
    container.registerSingleton(SecretResolver);
    if (!container.isRegistered(SecretResolverToken)) container.register(SecretResolverToken, { useToken: SecretResolver });
    server.route(secretRoutes(container));
  },
};
