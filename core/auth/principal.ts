import type { RoleName } from './permissions.ts';

/** A token can be limited to one org or one project (minted and service-account tokens). */
export interface TokenScope {
  type: 'org' | 'project';
  id: string;
}

/** Who is calling, as the auth scheme established it for this request. */
export interface Principal {
  kind: 'user';
  id: string;
  email: string;
  /** System administrator; never true for a scoped token. */
  isAdmin: boolean;
  scope: TokenScope | null;
  /** A token's role caps the role its memberships would give. */
  roleCap: RoleName | null;
  /** When the presented token expires (ISO 8601). */
  expiresAt: string;
}

/** What an authorized request may act on, left on `request.app.grant` for the handler. */
export interface Grant {
  orgId: string;
  projectId: string | null;
  role: RoleName;
}
