import type { Logger } from 'pino';
import type { RoleService } from '../../core/roles.ts';
import type { Db } from '../../core/db/knex.ts';
import { afterCommit } from '../../core/db/after-commit.ts';
import type { JobPhaseChange } from '../../core/ports/jobs.ts';
import type { ClaimedAttempt, WorkerDispatcher } from '../../core/ports/worker.ts';
import { AttemptRun } from './attempt-run.ts';
import type { WorkerDeps } from './worker-deps.ts';
import { sweepWorkspaces } from './workspaces.ts';
import { sweepOverlays } from './overlay.ts';

/**
 * The worker role in this process: the orchestrator's dispatcher hands it claimed attempts up to
 * `concurrency` at once, and each runs in the background. A job cancelled in this process stops its
 * run once the cancel commits (a JobPhaseListener); a cancel elsewhere shows as a lost lease at the
 * next heartbeat. Stopping the role kills what runs and gives those jobs back (ready again).
 */
export class InProcessWorker implements WorkerDispatcher, RoleService {
  readonly name = 'worker';
  private readonly runs = new Map<string, { run: AttemptRun; done: Promise<void> }>();
  private stopping = false;
  private sweeper: NodeJS.Timeout | null = null;
  private readonly freed: (() => void)[] = [];

  /**
   * `apiUrlFor`: SVC_API_URL for an attempt whose dispatcher suggested one (a remote orchestrator);
   * without it, or without a suggestion, `deps.apiUrl()`.
   */
  constructor(
    private readonly deps: WorkerDeps,
    private readonly concurrency: number,
    private readonly logger: Logger,
    private readonly apiUrlFor?: (suggested: string) => string,
  ) {}

  get isStopping(): boolean {
    return this.stopping;
  }

  onFreed(listener: () => void): void {
    this.freed.push(listener);
  }

  capacity(): number {
    return this.stopping ? 0 : Math.max(0, this.concurrency - this.runs.size);
  }

  async dispatch(attempt: ClaimedAttempt): Promise<void> {
    const { apiUrl } = attempt;
    const { apiUrlFor } = this;
    const deps = apiUrl && apiUrlFor ? { ...this.deps, apiUrl: () => apiUrlFor(apiUrl) } : this.deps;
    const run = new AttemptRun(deps, attempt);
    const done = run
      .execute()
      .catch((err) => this.logger.error({ err, jobId: attempt.jobId }, 'attempt run crashed'))
      .finally(() => {
        this.runs.delete(attempt.attemptId);
        for (const listener of this.freed) listener();
      });
    this.runs.set(attempt.attemptId, { run, done });
  }

  /** The JobPhaseListener: a running job that is cancelled stops once the cancel has committed. */
  readonly onPhases = async (jobs: JobPhaseChange[], trx: Db): Promise<void> => {
    if (this.runs.size === 0) return;
    for (const job of jobs) {
      if (job.phase !== 'cancelled') continue;
      for (const { run } of this.runs.values()) {
        if (run.claim.jobId === job.id) afterCommit(trx, () => run.stop(`job cancelled${job.close_reason ? `: ${job.close_reason}` : ''}`));
      }
    }
  };

  /** Starts the idle sweep of reused workspaces (now, then every half idle time, at most hourly). */
  async start(): Promise<void> {
    const { workspaceRoot, workspaceIdleMs } = this.deps.settings;
    // Copy-on-write workspaces a crashed worker left mounted (overlay.ts).
    await sweepOverlays(workspaceRoot)
      .then((swept) => swept.length && this.logger.info({ swept }, 'copy-on-write workspaces left mounted by a stopped worker unmounted'))
      .catch((err) => this.logger.warn({ err }, 'sweeping copy-on-write workspaces failed'));
    const sweep = () =>
      void sweepWorkspaces(workspaceRoot, workspaceIdleMs)
        .then((removed) => removed.length && this.logger.info({ removed }, 'idle workspaces removed'))
        .catch((err) => this.logger.warn({ err }, 'sweeping idle workspaces failed'));
    sweep();
    this.sweeper = setInterval(sweep, Math.max(1000, Math.min(workspaceIdleMs / 2, 3_600_000)));
    this.sweeper.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.sweeper) clearInterval(this.sweeper);
    const running = [...this.runs.values()];
    for (const { run } of running) run.stop('the worker is stopping', true);
    await Promise.all(running.map((r) => r.done));
  }
}
