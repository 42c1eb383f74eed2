import type { DomainPlugin } from '../../core/http/plugins.ts';
import { lookupLater, resolveLater } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import { ProjectDirectoryToken, UserDirectoryToken } from '../../core/ports/directory.ts';
import { GroupMembershipToken } from '../../core/ports/groups.ts';
import { DeployReviews } from './deploy-reviews.ts';
import { ManifestReaderToken, ManifestSyncListeners } from '../../core/ports/manifest.ts';
import { JobRequestChecks } from '../../core/ports/jobs.ts';
import { PipelineLauncherToken } from '../../core/ports/launchers.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { DeployerToken, EnvironmentActionsToken, EnvironmentDirectoryToken, EnvironmentSuspensionToken } from '../../core/ports/environments.ts';
import { ReleasesToken } from '../../core/ports/releases.ts';
import { EnvironmentRepository } from './repository.ts';
import { DeployTargets } from './targets.ts';
import { EnvironmentService, type EnvironmentDeps } from './service.ts';
import { DeployService } from './deploy-service.ts';
import { deployRoutes } from './deploy-routes.ts';
import { environmentRoutes } from './routes.ts';
import { deployLogRoutes } from './log-routes.ts';
import { DeployLogBus, DeployLogs } from './deploy-logs.ts';
import { environmentActions } from './actions.ts';
import { HealthReconciler } from './health.ts';
import { DirectDeploys } from './deploys.ts';
import { WorkEngine } from '../../core/work/engine.ts';
import { RoleServices } from '../../core/roles.ts';
import { describeTags } from '../../core/http/openapi.ts';

/**
 * Environments (docs/environments.md): records synced from the manifest and ensured by pipelines,
 * deploys on the configured deployer, suspension, health; the worker's environment actions and
 * `git.ref_policy` env; health reconciliation on the orchestrator; the suspension seam for billing and the counts for analytics.
 */
export const plugin: DomainPlugin = {
  name: 'environments',
  dependencies: ['projects', 'manifest', 'jobs'],
  register(server, { container }) {
    describeTags(server, { environments: 'Deploy environments of a project: deploys of releases, rollbacks, suspend and resume, health and deploy logs.' });
    for (const cls of [EnvironmentRepository, DeployLogBus, DeployLogs]) container.registerSingleton(cls as never);
    const repo = container.resolve(EnvironmentRepository);
    const manifests = container.resolve(ManifestReaderToken);
    const projects = container.resolve(ProjectDirectoryToken);
    const db = container.resolve(Tokens.Db);
    const targets = new DeployTargets(projects, manifests, lookupLater(container, SecretResolverToken));
    const deployer = resolveLater(container, DeployerToken);
    const logs = container.resolve(DeployLogs);
    const logger = container.resolve(Tokens.Logger);
    const deploys = new DirectDeploys({ db, repo, targets, deployer, logs, logger }, container.resolve(WorkEngine));
    const deps: EnvironmentDeps = {
      db,
      repo,
      targets,
      deployer,
      releases: lookupLater(container, ReleasesToken),
      manifests,
      pipelines: lookupLater(container, PipelineLauncherToken),
      logs,
      logger,
      deploys,
      projects,
      quota: container.resolve(Tokens.Config).limits.org.environments,
    };
    const service = new EnvironmentService(deps);
    const deployService = new DeployService(deps, service);
    const reviews = new DeployReviews(
      { ...deps, users: container.resolve(UserDirectoryToken), groups: lookupLater(container, GroupMembershipToken) },
      service,
      deployService,
    );
    container.registerInstance(EnvironmentService, service);
    container.registerInstance(DeployService, deployService);
    container.resolve(ManifestSyncListeners).add(service.synced);
    container.resolve(JobRequestChecks).add(async (projectId, request) => {
      if (typeof request.env_name !== 'string') return;
      const git = request.git as { ref_policy?: string } | undefined;
      await service.checkJobEnvironment(projectId, request.env_name, git?.ref_policy === 'env');
    });
    container.registerInstance(EnvironmentActionsToken, environmentActions(service, deployService, manifests));
    // What embedding code or a test registered first stays (a plugin keeps what is already registered).
    if (!container.isRegistered(EnvironmentSuspensionToken))
      container.registerInstance(EnvironmentSuspensionToken, {
        suspendOrg: async (orgId, reason, trx) => service.suspendAll(await projects.liveIdsInOrg(orgId, trx), reason, trx),
      });
    if (!container.isRegistered(EnvironmentDirectoryToken))
      container.registerInstance(EnvironmentDirectoryToken, {
        ofProjects: (projectIds) => repo.statuses(projectIds),
        forRun: (projectId, name) => service.forRun(projectId, name),
      });
    const config = container.resolve(Tokens.Config);
    const roles = container.resolve(RoleServices);
    roles.add('orchestrator', new HealthReconciler(service, config.environments.health_interval_seconds * 1000, logger));
    // Deploys run where they are accepted; orchestrators take over those whose process died (and reap their leases).
    roles.add('orchestrator', deploys.queue.service());
    server.route([
      ...environmentRoutes(service),
      ...deployRoutes(deployService, reviews),
      ...deployLogRoutes(deployService, container.resolve(DeployLogs), container.resolve(Tokens.Logger)),
    ]);
    server.ext('onPreStop', () => deployService.drain());
    server.ext('onPostStop', () => container.resolve(DeployLogBus).close());
  },
};
