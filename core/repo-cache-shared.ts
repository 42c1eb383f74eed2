import path from 'node:path';
import type { DependencyContainer } from './di.ts';
import type { Config } from './config/schema.ts';
import { Metrics } from './metrics.ts';
import { Tokens } from './tokens.ts';
import { RepoCache, type CacheGit } from './repo-cache.ts';
import { trustedGit } from './git-run.ts';

const CACHE_FOLDER = '.repo-cache';
const GIT_TIMEOUT_MS = 30 * 60_000;

/** The cache's git: svc's own (core/git-run.ts), with time for a large repository's first clone. */
export const cacheGit: CacheGit = (args, call) => trustedGit(args, { ...call, timeoutMs: GIT_TIMEOUT_MS });

/** Where the cache lives: `worker.repo_cache.path`, else `.repo-cache` in the workspace root (`worker.workspace_root`, else `<data_dir>/workspaces`). */
export function repoCacheRoot(config: Pick<Config, 'worker' | 'data_dir'>): string {
  const configured = config.worker.repo_cache.path;
  if (configured) return path.resolve(configured);
  return path.join(path.resolve(config.worker.workspace_root || path.join(config.data_dir, 'workspaces')), CACHE_FOLDER);
}

const instances = new WeakMap<DependencyContainer, RepoCache | null>();

/** The process's one repository cache (the worker's attempts and the build runner share it), or null when `worker.repo_cache.enabled` is false. */
export function sharedRepoCache(container: DependencyContainer): RepoCache | null {
  if (instances.has(container)) return instances.get(container)!;
  const config = container.resolve(Tokens.Config);
  const settings = config.worker.repo_cache;
  const metrics = container.isRegistered(Metrics, true) ? container.resolve(Metrics) : undefined;
  const cache = settings.enabled ? new RepoCache(repoCacheRoot(config), settings.max_bytes, cacheGit, metrics) : null;
  instances.set(container, cache);
  return cache;
}
