import path from 'node:path';
import type { DomainPlugin } from '../../core/http/plugins.ts';
import { Tokens } from '../../core/tokens.ts';
import { RoleServices } from '../../core/roles.ts';
import { createAdapter } from '../../core/adapters.ts';
import { MachineTokens } from '../../core/auth/machine-tokens.ts';
import { JobPhaseListeners } from '../../core/ports/jobs.ts';
import { WorkerDispatcherToken } from '../../core/ports/worker.ts';
import { RuntimeToken } from '../../core/ports/runtime.ts';
import { AttemptControlToken } from '../../core/ports/attempts.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { HarnessRegistryToken } from '../../core/ports/harness.ts';
import { ManifestReaderToken } from '../../core/ports/manifest.ts';
import type { DependencyContainer, InjectionToken } from '../../core/di.ts';
import { InProcessWorker } from './worker.ts';

const optional = <T>(container: DependencyContainer, token: InjectionToken<T>) => () => (container.isRegistered(token, true) ? container.resolve(token) : null);

/**
 * The worker role in this process (docs/worker.md): when the role runs here and nothing else was
 * registered as the WorkerDispatcher, attempts the orchestrator claims run here, on the configured
 * runtime. Without the role the plugin adds nothing, and the orchestrator claims nothing.
 */
export const plugin: DomainPlugin = {
  name: 'worker',
  dependencies: ['jobs'],
  async register(server, { container }) {
    const config = container.resolve(Tokens.Config);
    if (!config.roles.includes('worker') || container.isRegistered(WorkerDispatcherToken, true)) return;
    const logger = container.resolve(Tokens.Logger);
    const runtime = container.isRegistered(RuntimeToken, true)
      ? container.resolve(RuntimeToken)
      : await createAdapter('runtime', config.adapters.runtime, { config, db: container.resolve(Tokens.Db), databaseUrl: container.resolve(Tokens.DatabaseUrl), logger });
    const w = config.worker;
    const worker = new InProcessWorker({
      control: container.resolve(AttemptControlToken),
      runtime,
      tokens: container.resolve(MachineTokens),
      logger,
      settings: {
        workspaceRoot: path.resolve(w.workspace_root || path.join(config.data_dir, 'workspaces')),
        keepWorkspaces: w.keep_workspaces,
        heartbeatMs: w.heartbeat_seconds * 1000,
        logFlushMs: w.log_flush_ms,
        git: w.git,
      },
      secrets: optional(container, SecretResolverToken),
      harnesses: optional(container, HarnessRegistryToken),
      manifests: optional(container, ManifestReaderToken),
      apiUrl: () => {
        if (w.api_url) return w.api_url.replace(/\/$/, '');
        if (config.server.public_url) return config.server.public_url.replace(/\/$/, '');
        const host = ['0.0.0.0', '::', ''].includes(config.server.host) ? '127.0.0.1' : config.server.host;
        return `http://${host.includes(':') ? `[${host}]` : host}:${server.info.port || config.server.port}`;
      },
    }, w.concurrency, logger);
    container.registerInstance(WorkerDispatcherToken, worker);
    container.resolve(JobPhaseListeners).add(worker.onPhases);
    container.resolve(RoleServices).add('worker', worker);
  },
};
