import type { Logger } from 'pino';
import type { AttemptControl, AttemptLease } from '../../core/ports/attempts.ts';
import { DEFAULT_WORKER_TYPE, type ClaimedAttempt, type WorkerDispatcher } from '../../core/ports/worker.ts';
import type { RemoteWorker } from './remote.ts';

/** `hints.worker_type` values that mean the default worker unless SVC_WORKER_URLS names them itself. */
export const DEFAULT_TYPE_NAMES = [DEFAULT_WORKER_TYPE, 'default-worker'];

/** Where one worker type's attempts go. */
interface Route {
  capacity(): number;
  /** False: not taken (full or unreachable), the job goes back. */
  dispatch(attempt: ClaimedAttempt): Promise<boolean>;
}

export interface RoutingOptions {
  /** The worker role in this process, when it runs here. */
  local: WorkerDispatcher | null;
  remotes: RemoteWorker[];
  control: AttemptControl;
  logger: Logger;
  /** SVC_API_URL to suggest to remote workers (the API this orchestrator knows), if any. */
  apiUrl: () => string | null;
}

const leaseOf = (a: ClaimedAttempt): AttemptLease => ({ jobId: a.jobId, attemptId: a.attemptId, leaseToken: a.leaseToken });

/**
 * The orchestrator's WorkerDispatcher: each claimed attempt goes where its `hints.worker_type` says.
 * A type SVC_WORKER_URLS names → that remote worker over HTTP; no type (or `default`) → the `default`
 * URL if there is one, else the worker role in this process; any other type → the attempt fails at
 * once, for good, naming the type. A route that cannot take the attempt gives the job back (ready
 * again). Claims skip the types whose route is full (`fullTypes`) and take at most the smallest room
 * among the others per batch, so no route is handed more than it has room for.
 */
export class RoutingDispatcher implements WorkerDispatcher {
  private readonly remotes = new Map<string, RemoteWorker>();
  private readonly defaultRoute: Route | null;

  constructor(private readonly opts: RoutingOptions) {
    for (const remote of opts.remotes) this.remotes.set(remote.type, remote);
    const local = opts.local;
    const localRoute: Route | null = local
      ? {
          capacity: () => local.capacity(),
          dispatch: async (attempt) => {
            if (local.capacity() <= 0) return false;
            await local.dispatch(attempt);
            return true;
          },
        }
      : null;
    this.defaultRoute = this.remoteRoute(DEFAULT_WORKER_TYPE) ?? localRoute;
  }

  /** The worker types SVC_WORKER_URLS names. */
  get types(): string[] {
    return [...this.remotes.keys()];
  }

  capacity(): number {
    const rooms = [this.defaultRoute, ...this.remotes.values()]
      .filter((r): r is Route => r !== null)
      .map((r) => r.capacity())
      .filter((n) => n > 0);
    // Every route full: jobs of unconfigured types can still be claimed, one at a time, to fail them.
    return rooms.length ? Math.min(...rooms) : 1;
  }

  onFreed(listener: () => void): void {
    this.opts.local?.onFreed?.(listener);
  }

  fullTypes(): string[] {
    const full = [...this.remotes.values()].filter((r) => r.capacity() <= 0).map((r) => r.type);
    if (!this.defaultRoute || this.defaultRoute.capacity() <= 0) full.push(...DEFAULT_TYPE_NAMES.filter((t) => !this.remotes.has(t)));
    return [...new Set(full)];
  }

  async dispatch(attempt: ClaimedAttempt): Promise<void> {
    const type = attempt.workerType || null;
    const route = type && this.remotes.has(type) ? this.remoteRoute(type) : !type || DEFAULT_TYPE_NAMES.includes(type) ? this.defaultRoute : null;
    if (!route && type && !DEFAULT_TYPE_NAMES.includes(type)) return this.unknownType(attempt, type);
    if (route && (await route.dispatch(attempt))) return;
    await this.opts.control
      .release(leaseOf(attempt))
      .catch((err) => this.opts.logger.warn({ err, jobId: attempt.jobId }, 'could not give the job back; its lease will expire'));
  }

  private remoteRoute(type: string): Route | null {
    const remote = this.remotes.get(type);
    if (!remote) return null;
    return { capacity: () => remote.capacity(), dispatch: (attempt) => remote.dispatch({ ...attempt, apiUrl: this.opts.apiUrl() }) };
  }

  /** Fails the attempt for good: no retry would find a worker either, until the configuration changes. */
  private async unknownType(attempt: ClaimedAttempt, type: string): Promise<void> {
    const configured = this.types.length ? `SVC_WORKER_URLS has: ${this.types.join(', ')}` : 'SVC_WORKER_URLS names no worker types';
    const reason = `worker type '${type}' is not configured (${configured})`;
    const lease = leaseOf(attempt);
    try {
      await this.opts.control.appendLogs(attempt.jobId, attempt.attemptId, [{ seq: 1, stream: 'system', line: `failed: ${reason}`, at: new Date() }]);
      await this.opts.control.complete(lease, {
        result: { status: 'failed', reason },
        result_json: { svc: { status: 'failed', reason } },
        error: reason,
        final: true,
      });
      this.opts.logger.warn({ jobId: attempt.jobId, workerType: type }, reason);
    } catch (err) {
      this.opts.logger.error({ err, jobId: attempt.jobId }, 'could not fail an attempt of an unconfigured worker type; its lease will expire');
    }
  }
}
