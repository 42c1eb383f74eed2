import type { InjectionToken } from 'tsyringe';
import type { Logger } from 'pino';
import type { AgentsConfig, StoredManifest } from '../../domain/manifest/types.ts';
import { Registry } from '../registry.ts';
import type { Principal } from '../auth/principal.ts';

/**
 * What job creation reads from a project's synced manifest: `x-svc.defaults`, merged under the
 * job's explicit fields. The manifest domain registers the real reader; until then no project
 * has a manifest, so there are no defaults.
 */
export interface ManifestDefaults {
  jobDefaults(projectId: string): Promise<Record<string, unknown>>;
  /** `x-svc.agents` (the harness profiles a job may run), undefined without one: read with the defaults, so asking costs no more. */
  jobAgents?(projectId: string): Promise<AgentsConfig | undefined>;
}

export const ManifestDefaultsToken = Symbol('ManifestDefaults') as InjectionToken<ManifestDefaults>;

export const noManifestDefaults: ManifestDefaults = { jobDefaults: async () => ({}) };

/**
 * The synced manifests of a project, for domains that act on workflows, pipelines, services or
 * environments. Registered by the manifest plugin (load it before the plugins that read it).
 */
export interface ManifestReader {
  /** The newest synced version, or null when none was synced. */
  current(projectId: string): Promise<StoredManifest | null>;
  /** The newest synced version with this hash (to check a caller's `manifest_hash`), or null. */
  byHash(projectId: string, manifestHash: string): Promise<StoredManifest | null>;
  /** The newest version synced from the repository at this commit, or null. */
  atSha(projectId: string, gitSha: string): Promise<StoredManifest | null>;
  /** Projects whose current manifest has a trigger with a `cron` schedule. */
  projectsWithCronTriggers(): Promise<string[]>;
}

export const ManifestReaderToken = Symbol('ManifestReader') as InjectionToken<ManifestReader>;

/**
 * Syncs a project's manifest from its repository at a commit, for domains that need the manifest
 * of a SHA nobody synced yet (a build). Registered by the manifest plugin; fails with a 422 naming
 * the repository problem (unknown SHA, no manifest there, an invalid manifest).
 */
export interface ManifestSyncer {
  syncAt(projectId: string, gitSha: string, principal: Principal): Promise<StoredManifest>;
}

export const ManifestSyncerToken = Symbol('ManifestSyncer') as InjectionToken<ManifestSyncer>;

/** Told about every manifest version once it is stored (committed). */
export type ManifestSyncListener = (manifest: StoredManifest) => void | Promise<void>;

/**
 * Domains that derive state from the manifest (cron trigger schedules) hear of each sync here. The
 * manifest plugin registers it and calls `synced` after a sync commits; a listener's failure is
 * logged, never the sync's.
 */
export class ManifestSyncListeners extends Registry<ManifestSyncListener> {
  constructor(private readonly logger: Logger) {
    super();
  }

  async synced(manifest: StoredManifest): Promise<void> {
    for (const listener of this.entries) {
      await Promise.resolve()
        .then(() => listener(manifest))
        .catch((err) => this.logger.error({ err, projectId: manifest.project_id }, 'manifest sync listener failed'));
    }
  }
}
