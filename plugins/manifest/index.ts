import type { DomainPlugin } from '../../core/http/plugins.ts';
import { ManifestDefaultsToken, ManifestReaderToken, ManifestSyncListeners, ManifestSyncerToken } from '../../core/ports/manifest.ts';
import { Tokens } from '../../core/tokens.ts';
import { lookupLater } from '../../core/di.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { ManifestRepository } from './repository.ts';
import { GitManifestSource, ManifestSecrets } from './git-source.ts';
import { ManifestService } from './service.ts';
import { manifestRoutes } from './routes.ts';
import { definitionRoutes } from './definition-routes.ts';
import { OffLoopParser } from './off-loop.ts';
import { parseLimits } from '../../core/parse-limits.ts';
import { describeTags } from '../../core/http/openapi.ts';

/**
 * The project manifest (`.svc/manifest.yaml`): sync, validation, stored versions, and the
 * read-only workflow and pipeline listings. Load it before `jobs`, which reads its defaults.
 */
export const plugin: DomainPlugin = {
  name: 'manifest',
  dependencies: ['projects'],
  register(server, { container }) {
    describeTags(server, {
      manifest: "The project's manifest (.svc/manifest.yaml): the synced copy, syncing it from the repository or a body, and validating a draft.",
      workflows: 'Workflows defined in the manifest, and invoking one: a root job and a child job per step.',
    });
    container.registerInstance(ManifestSyncListeners, new ManifestSyncListeners(container.resolve(Tokens.Logger)));
    container.registerInstance(ManifestSecrets, lookupLater(container, SecretResolverToken));
    // Large manifests parse in worker threads, not on the event loop (off-loop.ts, docs/security.md).
    const parser = new OffLoopParser(parseLimits());
    container.registerInstance(OffLoopParser, parser);
    server.ext('onPostStop', () => parser.close());
    for (const cls of [ManifestRepository, GitManifestSource, ManifestService]) container.registerSingleton(cls as never);
    const repository = container.resolve(ManifestRepository);
    // Keep what an embedder or test registered before the plugins loaded.
    if (!container.isRegistered(ManifestReaderToken)) container.registerInstance(ManifestReaderToken, repository);
    if (!container.isRegistered(ManifestDefaultsToken)) container.registerInstance(ManifestDefaultsToken, repository);
    if (!container.isRegistered(ManifestSyncerToken)) container.registerInstance(ManifestSyncerToken, container.resolve(ManifestService));
    server.route(manifestRoutes(container));
    server.route(definitionRoutes(container));
  },
};
