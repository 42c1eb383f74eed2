import type { Permission, RoleName } from './permissions.ts';

/** A token can be limited to one org or one project (minted and service-account tokens). */
export interface TokenScope {
  type: 'org' | 'project';
  id: string;
}

/** Who is calling, as the auth scheme established it for this request. */
export interface Principal {
  kind: 'user' | 'service_account' | 'job';
  /** The user, service account or job id. */
  id: string;
  /** Users only. */
  email: string | null;
  /** System administrator; never true for a scoped token. */
  isAdmin: boolean;
  scope: TokenScope | null;
  /** A token's role caps the role its memberships would give. */
  roleCap: RoleName | null;
  /** When the presented token expires (ISO 8601). */
  expiresAt: string;
  /** Service-account and job tokens name their permissions; they never exceed them. Null for user tokens. */
  permissions: ReadonlySet<Permission> | null;
  /** A job token's job, attempt, and where it runs: it reaches nothing else. */
  job?: { id: string; attemptId: string; projectId: string; orgId: string };
}

/** What an authorized request may act on, left on `request.app.grant` for the handler. */
export interface Grant {
  orgId: string;
  projectId: string | null;
  /** The strongest built-in role the caller holds here (null when only custom roles or a token's list grant anything). */
  role: RoleName | null;
  /** Everything the caller may do here, after the token's scope, role cap and permission list. */
  permissions: ReadonlySet<Permission>;
}

/** Whether the caller may name `jobId` (as a related job, a parent): a job token names its own job only, others any job their grant reaches. */
export const mayNameJob = (principal: Principal, jobId: string): boolean => !principal.job || principal.job.id === jobId;
