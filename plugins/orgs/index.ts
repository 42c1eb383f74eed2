import type { DomainPlugin } from '../../core/http/plugins.ts';
import { OrgRepository } from './repository.ts';
import { OrgService } from './service.ts';
import { orgRoutes } from './routes.ts';
import { Orgs } from './directory.ts';
import { OrgDirectorySlotToken } from '../../core/ports/directory.ts';
import { describeTags } from '../../core/http/openapi.ts';

/** Organizations and their members. */
export const plugin: DomainPlugin = {
  name: 'orgs',
  register(server, { container }) {
    describeTags(server, { orgs: 'Organizations and their members. An org holds projects, secrets, webhooks, service accounts and access rules.' });
    container.registerSingleton(OrgRepository);
    container.registerSingleton(OrgService);
    container.resolve(OrgDirectorySlotToken).fill(container.resolve(Orgs));
    server.route(orgRoutes(container));
  },
};
