import type { DomainPlugin } from '../../core/http/plugins.ts';
import { AccessRoles } from './roles.ts';
import { AccessGroups } from './groups.ts';
import { AccessBindings } from './bindings.ts';
import { AccessCheck } from './check.ts';
import { OrgPrincipals } from './principals.ts';
import { ServiceAccounts } from './service-accounts.ts';
import { accessRoutes } from './routes.ts';
import { serviceAccountRoutes } from './service-account-routes.ts';
import { describeTags } from '../../core/http/openapi.ts';
import { GroupMembershipToken } from '../../core/ports/groups.ts';

/** Custom roles, groups, role bindings, the permission check, and service accounts with their tokens. */
export const plugin: DomainPlugin = {
  name: 'access',
  dependencies: ['orgs', 'projects'],
  register(server, { container }) {
    describeTags(server, {
      access:
        'Fine-grained access in an org: custom roles (sets of catalog permissions), groups, bindings of users, service accounts and groups to roles, and checks (can, explain).',
      'service accounts': 'Non-human principals of an org and their revocable, scoped tokens. /service-principals is the same resource under another name.',
    });
    for (const cls of [OrgPrincipals, AccessRoles, AccessGroups, AccessBindings, AccessCheck, ServiceAccounts]) container.registerSingleton(cls as never);
    const groups = container.resolve(AccessGroups);
    container.registerInstance(GroupMembershipToken, { hasUser: (orgId, group, userId) => groups.hasUser(orgId, group, userId) });
    server.route(accessRoutes(container));
    server.route(serviceAccountRoutes(container, 'service-accounts'));
    server.route(serviceAccountRoutes(container, 'service-principals'));
  },
};
