import type { DomainPlugin } from '../../core/http/plugins.ts';
import { lookupLater } from '../../core/di.ts';
import { EnvironmentDirectoryLookup, EnvironmentDirectoryToken } from '../../core/ports/environments.ts';
import { Analytics } from './service.ts';
import { analyticsRoutes } from './routes.ts';
import { describeTags } from '../../core/http/openapi.ts';

/** Org analytics: jobs, pipeline runs and environments of a window (docs/billing.md). Owns no table. */
export const plugin: DomainPlugin = {
  name: 'analytics',
  dependencies: ['projects', 'jobs', 'pipelines'],
  register(server, { container }) {
    describeTags(server, { analytics: "Reports over an org and a time window: jobs, pipeline runs, environments' health, and a summary." });
    if (!container.isRegistered(EnvironmentDirectoryLookup))
      container.registerInstance(EnvironmentDirectoryLookup, lookupLater(container, EnvironmentDirectoryToken));
    container.registerSingleton(Analytics);
    server.route(analyticsRoutes(container));
  },
};
