import type { DomainPlugin } from '../../core/http/plugins.ts';
import { ProjectRepository } from './repository.ts';
import { ProjectService } from './service.ts';
import { projectRoutes } from './routes.ts';
import { Projects } from './directory.ts';
import { ProjectDirectorySlotToken } from '../../core/ports/directory.ts';
import { describeTags } from '../../core/http/openapi.ts';

/** Projects and their members. */
export const plugin: DomainPlugin = {
  name: 'projects',
  dependencies: ['orgs'],
  register(server, { container }) {
    describeTags(server, { projects: 'Projects (a git repository in an org) and their members; most of the API lives under a project.' });
    container.registerSingleton(ProjectRepository);
    container.registerSingleton(ProjectService);
    container.resolve(ProjectDirectorySlotToken).fill(container.resolve(Projects));
    server.route(projectRoutes(container));
  },
};
