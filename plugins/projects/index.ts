import type { DomainPlugin } from '../../core/http/plugins.ts';
import { ProjectRepository } from './repository.ts';
import { ProjectService } from './service.ts';
import { projectRoutes } from './routes.ts';
import { Projects } from './directory.ts';
import { ProjectDirectoryToken } from '../../core/ports/directory.ts';

/** Projects and their members. */
export const plugin: DomainPlugin = {
  name: 'projects',
  dependencies: ['orgs'],
  register(server, { container }) {
    container.registerSingleton(ProjectRepository);
    container.registerSingleton(ProjectService);
    container.registerSingleton(Projects);
    container.register(ProjectDirectoryToken, { useToken: Projects });
    server.route(projectRoutes(container));
  },
};
