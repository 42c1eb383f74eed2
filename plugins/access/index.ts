import type { DomainPlugin } from '../../core/http/plugins.ts';
import { AccessRoles } from './roles.ts';
import { AccessGroups } from './groups.ts';
import { AccessBindings } from './bindings.ts';
import { AccessCheck } from './check.ts';
import { OrgPrincipals } from './principals.ts';
import { ServiceAccounts } from './service-accounts.ts';
import { accessRoutes } from './routes.ts';
import { serviceAccountRoutes } from './service-account-routes.ts';

/** Custom roles, groups, role bindings, the permission check, and service accounts with their tokens. */
export const plugin: DomainPlugin = {
  name: 'access',
  dependencies: ['orgs', 'projects'],
  register(server, { container }) {
    for (const cls of [OrgPrincipals, AccessRoles, AccessGroups, AccessBindings, AccessCheck, ServiceAccounts]) container.registerSingleton(cls as never);
    server.route(accessRoutes(container));
    server.route(serviceAccountRoutes(container, 'service-accounts'));
    server.route(serviceAccountRoutes(container, 'service-principals'));
  },
};
