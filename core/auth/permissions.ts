/**
 * The permission catalog and what each role grants: the one place both are written.
 * Permissions are `<resource>:<action>`; roles nest, owner ⊃ admin ⊃ member.
 */
export const PERMISSIONS = {
  'orgs:read': 'see the org, its settings, analytics and spend',
  'orgs:write': 'rename the org and change its settings',
  'orgs:delete': 'delete the org',
  'members:read': 'list members',
  'members:write': 'add, change and remove members',
  'projects:read': 'see projects',
  'projects:create': 'create projects in the org',
  'projects:write': 'change project settings',
  'projects:delete': 'delete projects',
  'manifest:read': 'read the project manifest',
  'manifest:write': 'sync the project manifest',
  'jobs:read': 'see jobs, attempts, logs and receipts',
  'jobs:create': 'create jobs and invoke workflows',
  'jobs:write': 'change, claim, submit and review jobs',
  'jobs:admin': 'administer jobs of others',
  'jobs:harness_override': 'override harness profiles and environment of a job',
  'workflows:read': 'see workflows',
  'workflows:invoke': 'invoke workflows',
  'pipelines:read': 'see pipelines and their runs',
  'pipelines:run': 'run pipelines',
  'pipelines:approve': 'approve and cancel pipeline runs',
  'builds:read': 'see builds, their runs, logs and artifacts',
  'builds:write': 'start, rerun and cancel builds',
  'builds:admin': 'administer builds',
  'releases:read': 'see releases',
  'releases:write': 'create releases',
  'environments:read': 'see environments',
  'environments:write': 'create environments, deploy, suspend and resume them',
  'environments:admin': 'delete persistent environments',
  'events:read': 'see events',
  'events:write': 'create events',
  'webhooks:read': 'see webhook subscriptions and deliveries',
  'webhooks:write': 'manage webhook subscriptions and replays',
  'secrets:read': 'use secret values in jobs',
  'secrets:write': 'create and replace secrets',
  'secrets:admin': 'administer secrets',
  'access:read': 'see roles, bindings and groups, and check permissions',
  'access:admin': 'manage roles, bindings, groups and service accounts',
  'chat:write': 'post to threads and chat routes',
  'routes:read': 'see the chat routes of projects',
  'routes:write': 'create and delete chat routes (which chat team and channel feed a project)',
  'threads:read': 'read threads',
  'orgfs:read': 'read org files',
  'orgfs:write': 'write org files',
  'orgdocs:read': 'read org documents',
  'orgdocs:write': 'write org documents',
  'envdb:read': 'read environment databases',
  'envdb:write': 'write environment databases',
  'inference:use': 'call the inference proxy',
  'inference:admin': 'manage inference targets and models',
} as const;

export type Permission = keyof typeof PERMISSIONS;
export const ROLE_NAMES = ['owner', 'admin', 'member'] as const;
export type RoleName = (typeof ROLE_NAMES)[number];

const MEMBER: Permission[] = [
  'orgs:read',
  'members:read',
  'projects:read',
  'manifest:read',
  'jobs:read',
  'jobs:create',
  'jobs:write',
  'workflows:read',
  'workflows:invoke',
  'pipelines:read',
  'pipelines:run',
  'builds:read',
  'releases:read',
  'environments:read',
  'events:read',
  'events:write',
  'webhooks:read',
  'access:read',
  'chat:write',
  'routes:read',
  'threads:read',
  'orgfs:read',
  'orgdocs:read',
  'envdb:read',
  'inference:use',
];

const ADMIN: Permission[] = [
  ...MEMBER,
  'orgs:write',
  'members:write',
  'projects:create',
  'projects:write',
  'projects:delete',
  'manifest:write',
  'jobs:admin',
  'jobs:harness_override',
  'pipelines:approve',
  'builds:write',
  'builds:admin',
  'releases:write',
  'environments:write',
  'environments:admin',
  'webhooks:write',
  'routes:write',
  'secrets:read',
  'secrets:write',
  'secrets:admin',
  'access:admin',
  'orgfs:write',
  'orgdocs:write',
  'envdb:write',
  'inference:admin',
];

const OWNER: Permission[] = [...ADMIN, 'orgs:delete'];

export const ROLE_PERMISSIONS: Record<RoleName, ReadonlySet<Permission>> = {
  owner: new Set(OWNER),
  admin: new Set(ADMIN),
  member: new Set(MEMBER),
};

const RANK: Record<RoleName, number> = { member: 1, admin: 2, owner: 3 };

/** The stronger of two roles; either may be absent. */
export function strongerRole(a: RoleName | null | undefined, b: RoleName | null | undefined): RoleName | null {
  if (!a) return b ?? null;
  if (!b) return a;
  return RANK[a] >= RANK[b] ? a : b;
}

/** The weaker of two roles: a token's role caps the membership's. */
export const weakerRole = (a: RoleName, b: RoleName): RoleName => (RANK[a] <= RANK[b] ? a : b);

export const isPermission = (name: string): name is Permission => Object.hasOwn(PERMISSIONS, name);

export const isRoleName = (name: unknown): name is RoleName => (ROLE_NAMES as readonly unknown[]).includes(name);
