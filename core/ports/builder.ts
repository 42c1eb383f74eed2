import type { InjectionToken } from 'tsyringe';
import type { RepoAccess } from '../git-access.ts';
import type { RepoCache } from '../repo-cache.ts';

/** The spec's build error classes. */
export const BUILD_ERROR_CLASSES = ['auth_error', 'clone_error', 'build_error', 'timeout_error', 'resource_error', 'registry_error'] as const;
export type BuildErrorClass = (typeof BUILD_ERROR_CLASSES)[number];

/** Lines of builder output a failed run keeps (spec Limits: build log tail). */
export const BUILD_LOG_TAIL_LINES = 30;

/** Where a build pushes: a registry host and how to log in to it (never logged). */
export interface PushTarget {
  host: string;
  username: string;
  password: string;
}

/** One service to build: its context inside the checkout, its Dockerfile relative to the context, and the full image reference to tag. */
export interface ServiceBuild {
  service: string;
  context: string;
  dockerfile: string;
  image_ref: string;
}

export interface BuildRequest {
  runId: string;
  repoUrl: string;
  /**
   * The project's credentials for `repoUrl` (core/git-access.ts): git's extra environment, and the
   * HTTPS token itself for builders whose tool takes it its own way; never in arguments or logs.
   */
  access: Pick<RepoAccess, 'env' | 'secrets' | 'token'>;
  gitSha: string;
  /** The worker's repository cache a builder that checks out on this machine clones from (core/repo-cache.ts); null: from the remote. */
  repoCache?: RepoCache | null;
  services: ServiceBuild[];
  /** `linux/amd64`…; empty: the engine's own platform. */
  platforms: string[];
  /** null: images stay in the engine (registry `none`). */
  push: PushTarget | null;
  /** Aborted when the run is cancelled or times out. */
  signal: AbortSignal;
  /** One line of builder output. */
  log(line: string, stream?: 'stdout' | 'stderr' | 'system'): void;
}

export interface BuiltImage {
  service_name: string;
  image_ref: string;
  digest: string;
  platforms: string[];
  size_bytes: number | null;
}

/** A builder's failure, classed; `stage` is the Dockerfile stage that failed, when the builder can tell. */
export class BuildFailure extends Error {
  constructor(
    readonly errorClass: BuildErrorClass,
    message: string,
    readonly stage: string | null = null,
  ) {
    super(message);
    this.name = 'BuildFailure';
  }
}

/**
 * A BuildFailure, or an error a third-party builder made without importing svc (examples/builder-plugin):
 * named 'BuildFailure' with an `errorClass` of the spec's (and `stage`, a string or null).
 */
export function isBuildFailure(err: unknown): err is BuildFailure {
  if (err instanceof BuildFailure) return true;
  if (!(err instanceof Error) || err.name !== 'BuildFailure') return false;
  const { errorClass, stage } = err as Error & { errorClass?: unknown; stage?: unknown };
  return (BUILD_ERROR_CLASSES as readonly unknown[]).includes(errorClass) && (stage === undefined || stage === null || typeof stage === 'string');
}

export interface Builder {
  /** The backend name (`buildx`, `buildkit`, `kaniko`), as runs record it. */
  readonly name: string;
  /** Whether it can build here; `reason` says why not. */
  available(): Promise<{ ok: true } | { ok: false; reason: string }>;
  build(request: BuildRequest): Promise<BuiltImage[]>;
}

/** Builders by backend name (many-valued); config `builds.backend` names the one new runs use. */
export class BuilderRegistry {
  private readonly builders = new Map<string, Builder>();

  add(builder: Builder): void {
    this.builders.set(builder.name, builder);
  }

  get(name: string): Builder | undefined {
    return this.builders.get(name);
  }

  names(): string[] {
    return [...this.builders.keys()];
  }
}

export const BuilderRegistryToken = Symbol('BuilderRegistry') as InjectionToken<BuilderRegistry>;
