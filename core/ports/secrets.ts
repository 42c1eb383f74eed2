import type { InjectionToken } from 'tsyringe';

/** Where a job runs: the scopes its secrets are looked up in (org is derived from the project when omitted). */
export interface SecretContext {
  projectId?: string | null;
  userId?: string | null;
  orgId?: string | null;
}

/**
 * Secret values for jobs, by name: project over user over org over system. A missing secret is
 * SecretMissing (core/errors.ts) naming it and the scopes searched. The secrets domain registers the implementation; without
 * it nothing is registered under the token, and a job that needs secrets cannot resolve them.
 */
export interface SecretResolver {
  resolve(name: string, ctx: SecretContext): Promise<string>;
  /** Replaces every `${secret.NAME}` in `text`. */
  expand(text: string, ctx: SecretContext): Promise<string>;
  /** The same, with the values it put in (what output and logs must then mask). */
  expandWithValues(text: string, ctx: SecretContext): Promise<{ text: string; values: string[] }>;
}

export const SecretResolverToken = Symbol('SecretResolver') as InjectionToken<SecretResolver>;
