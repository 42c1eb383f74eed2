import type { SecretScope } from './schemas.ts';

/** Whose secret: an org, project or user id; none for system secrets. */
export interface SecretOwner {
  scope: SecretScope;
  id: string | null;
}

/** The AAD a value is sealed under: a sealed value copied to another scope, owner or name does not open. */
export const secretContext = (owner: SecretOwner, name: string): string => `secret:${owner.scope}:${owner.id ?? ''}:${name}`;

/** The owner column of the `secrets` table for a scope (system secrets have none). */
export const ownerColumn = (scope: SecretScope): string | null => (scope === 'system' ? null : `${scope}_id`);
