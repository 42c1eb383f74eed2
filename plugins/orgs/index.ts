import type { DomainPlugin } from '../../core/http/plugins.ts';
import { OrgRepository } from './repository.ts';
import { OrgService } from './service.ts';
import { orgRoutes } from './routes.ts';
import { Orgs } from './directory.ts';
import { OrgDirectorySlotToken } from '../../core/ports/directory.ts';

/** Organizations and their members. */
export const plugin: DomainPlugin = {
  name: 'orgs',
  register(server, { container }) {
    container.registerSingleton(OrgRepository);
    container.registerSingleton(OrgService);
    container.resolve(OrgDirectorySlotToken).fill(container.resolve(Orgs));
    server.route(orgRoutes(container));
  },
};
