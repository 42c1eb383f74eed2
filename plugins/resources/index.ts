import type { DomainPlugin } from '../../core/http/plugins.ts';
import { OrgDocumentsToken, ResourceStoreToken } from '../../core/ports/resources.ts';
import { DocWriter } from './doc-writer.ts';
import { DocRepository } from './repository.ts';
import { DocService } from './service.ts';
import { DbResourceStore } from './store.ts';
import { docRoutes } from './routes.ts';
import { describeTags } from '../../core/http/openapi.ts';

/** Resources jobs can reference: versioned org documents, and the store the worker hydrates them from (docs/resources.md). */
export const plugin: DomainPlugin = {
  name: 'resources',
  dependencies: ['orgs', 'projects', 'jobs'],
  register(server, { container }) {
    describeTags(server, { docs: 'Org documents: versioned text files under a path, which jobs can mount as resources.' });
    for (const cls of [DocRepository, DocService, DbResourceStore]) container.registerSingleton(cls as never);
    if (!container.isRegistered(ResourceStoreToken)) container.register(ResourceStoreToken, { useToken: DbResourceStore });
    if (!container.isRegistered(OrgDocumentsToken)) container.register(OrgDocumentsToken, { useClass: DocWriter });
    server.route(docRoutes(container));
  },
};
