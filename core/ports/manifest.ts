import type { InjectionToken } from 'tsyringe';

/**
 * What job creation reads from a project's synced manifest: `x-svc.defaults`, merged under the
 * job's explicit fields. The manifest domain registers the real reader; until then no project
 * has a manifest, so there are no defaults.
 */
export interface ManifestDefaults {
  jobDefaults(projectId: string): Promise<Record<string, unknown>>;
}

export const ManifestDefaultsToken = Symbol('ManifestDefaults') as InjectionToken<ManifestDefaults>;

export const noManifestDefaults: ManifestDefaults = { jobDefaults: async () => ({}) };
