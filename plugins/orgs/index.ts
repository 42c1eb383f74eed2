import type { DomainPlugin } from '../../core/http/plugins.ts';
import { OrgRepository } from './repository.ts';
import { OrgService } from './service.ts';
import { orgRoutes } from './routes.ts';

/** Organizations and their members. */
export const plugin: DomainPlugin = {
  name: 'orgs',
  register(server, { container }) {
    container.registerSingleton(OrgRepository);
    container.registerSingleton(OrgService);
    server.route(orgRoutes(container));
  },
};
