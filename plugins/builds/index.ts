import type { DomainPlugin } from '../../core/http/plugins.ts';
import { Tokens } from '../../core/tokens.ts';
import { AccessTargets } from '../../core/http/access.ts';
import { RoleServices } from '../../core/roles.ts';
import { createBuilders, registryModes } from '../../core/adapters.ts';
import { BuilderRegistryToken } from '../../core/ports/builder.ts';
import { ReleasesToken } from '../../core/ports/releases.ts';
import { BuildActionsToken } from '../../core/ports/build-actions.ts';
import { RegistryPullSecretsToken } from '../../core/ports/registry.ts';
import { NotFound } from '../../core/errors.ts';
import { BuildRepository } from './repository.ts';
import { BuildLogBus, BuildLogs } from './logs.ts';
import { BuildService } from './service.ts';
import { ReleaseService } from './releases.ts';
import { RegistryTokens } from './registry-tokens.ts';
import { RegistryModes, RegistryTargets, SecretLookup, secretLookup } from './targets.ts';
import { BuildRunner } from './runner.ts';
import { sharedRepoCache } from '../../core/repo-cache-shared.ts';
import { BuildActionService } from './actions.ts';
import { buildRoutes } from './routes.ts';
import { logRoutes } from './log-routes.ts';
import { releaseRoutes } from './release-routes.ts';
import { tokenRoutes } from './token-routes.ts';
import { describeTags } from '../../core/http/openapi.ts';

/**
 * Builds, releases and the native registry's token server (docs/builds.md). Builds run on the
 * worker role with the configured builder; the API role records and serves them.
 */
export const plugin: DomainPlugin = {
  name: 'builds',
  dependencies: ['projects', 'manifest'],
  async register(server, { container }) {
    describeTags(server, {
      builds: 'Container image builds of a project: the services of a commit built from the manifest, their runs, logs and artifacts.',
      registry:
        "The native container registry's token endpoints: registry tokens for docker login (Basic credentials) and for workers and deployers (the internal API key); neither takes a svc token.",
      releases: "Releases: a successful build's images under a tag of the project, ready to deploy.",
    });
    const config = container.resolve(Tokens.Config);
    const deps = {
      config,
      db: container.resolve(Tokens.Db),
      databaseUrl: container.resolve(Tokens.DatabaseUrl),
      logger: container.resolve(Tokens.Logger),
    };
    const builders = await createBuilders(config.builds.builders, deps);
    if (!container.isRegistered(BuilderRegistryToken)) container.registerInstance(BuilderRegistryToken, builders);
    container.registerInstance(RegistryModes, await registryModes());
    container.registerInstance(SecretLookup, secretLookup(container));
    for (const cls of [BuildRepository, BuildLogBus, BuildLogs, BuildService, ReleaseService, RegistryTokens, RegistryTargets, BuildRunner, BuildActionService])
      container.registerSingleton(cls as never);
    if (!container.isRegistered(ReleasesToken)) container.registerInstance(ReleasesToken, container.resolve(ReleaseService));
    if (!container.isRegistered(BuildActionsToken)) container.registerInstance(BuildActionsToken, container.resolve(BuildActionService));
    if (!container.isRegistered(RegistryPullSecretsToken)) container.registerInstance(RegistryPullSecretsToken, container.resolve(RegistryTargets));
    const runner = container.resolve(BuildRunner);
    runner.repoCache = sharedRepoCache(container);
    container.resolve(RoleServices).add('worker', runner);

    const builds = container.resolve(BuildRepository);
    const targets = container.resolve(AccessTargets);
    targets.register('build', async (request) => {
      const buildId = (request.params as Record<string, string>).build_id;
      const spec = await builds.spec(buildId);
      if (!spec) throw new NotFound(`build ${buildId} not found`);
      return { project: spec.project_id, notFound: `build ${buildId} not found` };
    });
    const releases = container.resolve(ReleaseService);
    targets.register('release', async (request) => {
      const tag = (request.params as Record<string, string>).tag;
      const notFound = `release ${tag} not found`;
      // A rel_ id alone names its project; validation asked for project_id otherwise.
      const projectId = (request.query as Record<string, string | undefined>).project_id ?? (await releases.projectOf(tag));
      if (!projectId) throw new NotFound(notFound);
      return { project: projectId, notFound };
    });
    server.route([...buildRoutes(container), ...logRoutes(container), ...releaseRoutes(container), ...tokenRoutes(container)]);
    server.ext('onPostStop', () => container.resolve(BuildLogBus).close());
  },
};
