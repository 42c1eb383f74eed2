import type { DomainPlugin } from '../../core/http/plugins.ts';
import { Tokens } from '../../core/tokens.ts';
import { RoleServices } from '../../core/roles.ts';
import { RoleListener } from '../../core/http/role-listener.ts';
import { MachineTokens } from '../../core/auth/machine-tokens.ts';
import { SigningKeys } from '../../core/auth/signing-keys.ts';
import { JobPhaseListeners } from '../../core/ports/jobs.ts';
import { WorkerDispatcherToken } from '../../core/ports/worker.ts';
import { RuntimeToken } from '../../core/ports/runtime.ts';
import { AttemptControlToken } from '../../core/ports/attempts.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { HarnessAvailabilityToken, HarnessRegistryToken } from '../../core/ports/harness.ts';
import { ManifestReaderToken } from '../../core/ports/manifest.ts';
import { CoordinationThreadsToken } from '../../core/ports/threads.ts';
import { ResourceStoreToken } from '../../core/ports/resources.ts';
import { BuildActionsToken } from '../../core/ports/build-actions.ts';
import { ManagedModelsToken } from '../../core/ports/inference.ts';
import { EnvironmentActionsToken } from '../../core/ports/environments.ts';
import { VcsHostToken } from '../../core/ports/vcshost.ts';
import { ChatAppToken } from '../../core/ports/chatapp.ts';
import type { DependencyContainer, InjectionToken } from '../../core/di.ts';
import { runAsOf } from './run-as.ts';
import { attemptUser, decideSandbox } from './sandbox-policy.ts';
import { workspaceRoot } from './workspace-root.ts';
import { sharedRepoCache } from '../../core/repo-cache-shared.ts';
import { overlayUnavailable } from './overlay.ts';
import { repoUrlPolicy } from '../../core/git-access.ts';
import { outboundGuard } from '../../core/http/address-guard.ts';
import { InProcessWorker } from './worker.ts';
import { DispatchTokens } from './dispatch-token.ts';
import { dispatchRoutes } from './dispatch-routes.ts';
import { RemoteWorker } from './remote.ts';
import { RoutingDispatcher } from './routing.ts';
import { HarnessReporter } from './harness-reporter.ts';

const optional =
  <T>(container: DependencyContainer, token: InjectionToken<T>) =>
  () =>
    container.isRegistered(token, true) ? container.resolve(token) : null;

/**
 * The worker role in this process and worker routing (docs/worker.md). Unless something else was
 * registered as the WorkerDispatcher: with the role here, attempts run here on the configured runtime
 * and other processes may dispatch to it (POST /worker/attempts); with the role or SVC_WORKER_URLS,
 * the RoutingDispatcher sends each claimed attempt where its `hints.worker_type` says. With neither
 * the plugin adds nothing, and the orchestrator claims nothing.
 */
export const plugin: DomainPlugin = {
  name: 'worker',
  dependencies: ['jobs'],
  async register(server, { container }) {
    const config = container.resolve(Tokens.Config);
    const w = config.worker;
    const runsHere = config.roles.includes('worker');
    if (container.isRegistered(WorkerDispatcherToken, true) || (!runsHere && Object.keys(w.urls).length === 0)) return;
    const logger = container.resolve(Tokens.Logger);
    const control = container.resolve(AttemptControlToken);
    const dispatchTokens = new DispatchTokens(container.resolve(SigningKeys));
    const configuredApiUrl = (w.api_url || config.server.public_url || '').replace(/\/$/, '') || null;
    const ownApiUrl = () => {
      const host = ['0.0.0.0', '::', ''].includes(config.server.host) ? '127.0.0.1' : config.server.host;
      return `http://${host.includes(':') ? `[${host}]` : host}:${server.info.port || config.server.port}`;
    };
    const sandbox = runsHere ? await decideSandbox(w.sandbox, config.env) : null;
    if (sandbox?.refusal) logger.error(`attempts will fail: ${sandbox.refusal}`);
    else if (sandbox?.warning) logger.warn(sandbox.warning);
    else if (sandbox) logger.info(`attempt sandbox: bubblewrap (network ${sandbox.network})`);
    const runAs = runAsOf(w.run_as_uid, w.run_as_gid);
    const workspaces = sandbox
      ? await workspaceRoot({ configured: w.workspace_root || null, dataDir: config.data_dir, user: attemptUser(runAs, sandbox), sandboxed: sandbox.on })
      : null;
    if (workspaces?.note) logger.info(workspaces.note);
    const copyOnWrite = runsHere && w.repo_cache.enabled && w.repo_cache.copy_on_write ? await overlayUnavailable() : 'off';
    if (copyOnWrite && copyOnWrite !== 'off') logger.info(`copy-on-write workspaces: not here (${copyOnWrite}); attempts check out in full`);

    const worker = runsHere ? inProcessWorker() : null;
    container.registerInstance(
      WorkerDispatcherToken,
      new RoutingDispatcher({
        local: worker,
        remotes: Object.entries(w.urls).map(
          ([type, url]) => new RemoteWorker({ type, url, tokens: dispatchTokens, logger, timeoutMs: w.dispatch_timeout_ms, retryMs: w.dispatch_retry_ms }),
        ),
        control,
        logger,
        apiUrl: () => configuredApiUrl ?? (config.roles.includes('api') ? ownApiUrl() : null),
      }),
    );

    function inProcessWorker(): InProcessWorker {
      const runtime = container.resolve(RuntimeToken);
      // Which harnesses this worker can run, reported for job creation to check (docs/harnesses.md, "Refused at create").
      const reporter = new HarnessReporter({
        harnesses: optional(container, HarnessRegistryToken),
        availability: optional(container, HarnessAvailabilityToken),
        intervalMs: w.harness_report_seconds * 1000,
        logger,
        commandsIn: runtime.commandsIn,
      });
      const worker = new InProcessWorker(
        {
          control,
          runtime,
          tokens: container.resolve(MachineTokens),
          logger,
          settings: {
            workspaceRoot: workspaces!.root,
            keepWorkspaces: w.keep_workspaces,
            workspaceIdleMs: w.workspace_idle_seconds * 1000,
            repoCache: sharedRepoCache(container),
            copyOnWrite: copyOnWrite === null,
            heartbeatMs: w.heartbeat_seconds * 1000,
            leaseSeconds: w.lease_seconds,
            logFlushMs: w.log_flush_ms,
            git: w.git,
            runAs,
            sandbox: sandbox!,
            repoUrls: repoUrlPolicy(config),
            addresses: outboundGuard(config),
            diff: w.diff,
          },
          secrets: optional(container, SecretResolverToken),
          harnesses: optional(container, HarnessRegistryToken),
          manifests: optional(container, ManifestReaderToken),
          coordination: optional(container, CoordinationThreadsToken),
          resources: optional(container, ResourceStoreToken),
          managedModels: optional(container, ManagedModelsToken),
          buildActions: optional(container, BuildActionsToken),
          environments: optional(container, EnvironmentActionsToken),
          vcshost: optional(container, VcsHostToken),
          chatapp: optional(container, ChatAppToken),
          apiUrl: () => configuredApiUrl ?? ownApiUrl(),
          harnessesChanged: () => void reporter.refresh(),
        },
        w.concurrency,
        logger,
        (suggested) => configuredApiUrl ?? suggested,
      );
      container.resolve(JobPhaseListeners).add(worker.onPhases);
      const routes = dispatchRoutes(worker, dispatchTokens, control);
      if (config.roles.includes('api')) server.route(routes);
      else container.resolve(RoleListener).server.route(routes); // the kernel's listener of a process without the api role; it stops after the runs
      container.resolve(RoleServices).add('worker', worker);
      container.resolve(RoleServices).add('worker', reporter);
      return worker;
    }
  },
};
