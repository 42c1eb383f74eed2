import type { InjectionToken } from 'tsyringe';

/** A release as deployers read it: what to run (digests by service) and where it came from. */
export interface ReleaseRecord {
  id: string;
  project_id: string;
  tag: string;
  version: string | null;
  git_sha: string;
  manifest_hash: string;
  build_id: string;
  /** service name → `sha256:…` */
  image_digests: Record<string, string>;
  /** service name → pushed image reference (`host/ns/service@sha256:…`), when the build recorded one. */
  images: Record<string, string>;
  created_at: string;
}

/** Releases of a project, for the environments/deploy domain. Registered by the builds plugin. */
export interface Releases {
  byTag(projectId: string, tag: string): Promise<ReleaseRecord | null>;
  byId(projectId: string, releaseId: string): Promise<ReleaseRecord | null>;
}

export const ReleasesToken = Symbol('Releases') as InjectionToken<Releases>;
