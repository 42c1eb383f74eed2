import type { InjectionToken } from 'tsyringe';

/** Where a job runs: the scopes its secrets are looked up in (org is derived from the project when omitted). */
export interface SecretContext {
  projectId?: string | null;
  userId?: string | null;
  orgId?: string | null;
  /**
   * svc itself uses the value server-side and hands it to no job, process, file or host a tenant
   * chooses (verifying a webhook's signature, the inference proxy calling a system target): system
   * secrets then resolve whether shared with jobs or not. Unset for everything else, which gets a
   * system secret only when it is marked `shared_with_jobs` and is not one of svc's own integration
   * secrets (core/secrets/platform.ts); otherwise SecretNotShared.
   */
  internal?: boolean;
}

/**
 * Secret values for jobs, by name: project over user over org over system (system only when shared
 * with jobs, or `internal`). A missing secret is SecretMissing (core/errors.ts) naming it and the
 * scopes searched; one only an unshared system secret holds is SecretNotShared. The secrets domain registers the implementation; without
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
