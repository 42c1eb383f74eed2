import type { Logger } from 'pino';
import type { InjectionToken } from 'tsyringe';
import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Config } from '../../../core/config/schema.ts';
import type { RoleService } from '../../../core/roles.ts';
import type { WorkerDispatcher } from '../../../core/ports/worker.ts';
import { Passes } from '../../../core/passes.ts';
import { Claims, type Claimed } from './claims.ts';
import { LaneClaims } from '../races/lane-claims.ts';
import { JobWakeups } from '../lifecycle/wakeups.ts';
import { JobMetrics } from '../metrics.ts';
import { isDeadPredecessor, leaseOwnerName, localOwnerPrefix } from './node-identity.ts';

/** The backstop when a notification is missed (or a deferral simply runs out). */
const POLL_EVERY_MS = 1_000;
const REAP_EVERY_MS = 5_000;
const MAX_BATCH = 32;

/**
 * The orchestrator's claimer: woken by NOTIFY on svc_jobs (and polled every second), it claims
 * ready jobs for as many attempts as the worker dispatcher accepts (leaving those of full worker
 * types ready) and hands each over; it also
 * reaps expired leases. Claiming is SKIP LOCKED inside Claims, so any number may run at once.
 * Without a registered dispatcher it claims nothing: jobs wait for external agents' claims.
 */
/** The worker dispatcher when one is registered (looked up at start: the worker plugin loads after jobs). */
export const WorkerDispatcherLookup = Symbol('WorkerDispatcherLookup') as InjectionToken<() => WorkerDispatcher | null>;

@injectable()
export class JobDispatcher implements RoleService {
  readonly name = 'job-dispatcher';
  private readonly owner = leaseOwnerName();
  private readonly leaseSeconds: number;
  private worker: WorkerDispatcher | null = null;
  private stopped = false;
  private readonly passes = new Passes(
    () => this.pass(),
    (err) => this.logger.error({ err }, 'claim pass failed'),
  );

  constructor(
    @inject(Claims) private readonly claims: Claims,
    @inject(JobWakeups) private readonly wakeups: JobWakeups,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(Tokens.DatabaseUrl) private readonly databaseUrl: string,
    @inject(Tokens.Config) config: Config,
    /** The worker side is registered by a plugin that loads after this one (or never: external claims only). */
    @inject(WorkerDispatcherLookup) private readonly workerDispatcher: () => WorkerDispatcher | null,
    @inject(JobMetrics) private readonly metrics: JobMetrics,
    @inject(LaneClaims) private readonly lanes: LaneClaims,
  ) {
    this.leaseSeconds = config.worker.lease_seconds;
  }

  async start(): Promise<void> {
    this.worker = this.workerDispatcher();
    if (!this.worker) this.logger.info('no worker dispatcher registered: ready jobs wait for external claims');
    else {
      await this.passes.wakeOn(this.wakeups, this.databaseUrl, this.logger, POLL_EVERY_MS);
      // Room freed in this process: ready jobs waiting for it are claimed at once.
      this.worker.onFreed?.(() => this.passes.wake());
      this.passes.every(POLL_EVERY_MS);
      this.passes.wake();
    }
    await this.releaseDeadPredecessors();
    this.passes.every(REAP_EVERY_MS, () => void this.reap());
  }

  /** Attempts a previous orchestrator of this host held when it died run again now, not when their leases run out. */
  private async releaseDeadPredecessors(): Promise<void> {
    try {
      const dead = await this.claims.releaseDeadPredecessors(localOwnerPrefix(), (owner) => isDeadPredecessor(owner, this.owner));
      if (dead.length === 0) return;
      this.logger.warn({ owners: dead }, 'leases of orchestrators of this host that are gone were ended; their attempts run again');
      await this.reap();
    } catch (err) {
      this.logger.error({ err }, 'ending the leases of gone orchestrators failed; they run out on their own');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.passes.stop();
  }

  private async pass(): Promise<void> {
    const worker = this.worker!;
    for (let room = worker.capacity(); room > 0 && !this.stopped; room = worker.capacity()) {
      const wanted = Math.min(room, MAX_BATCH);
      const claimed = this.metrics.claim.startTimer();
      const batch = await this.claims.claimNext(this.owner, wanted, {
        leaseSeconds: this.leaseSeconds,
        skipWorkerTypes: worker.fullTypes?.() ?? [],
      });
      // Race lanes (docs/worker.md, "Rival attempts") take the room ready jobs left.
      if (batch.length < wanted) batch.push(...(await this.lanes.claim(this.owner, wanted - batch.length, this.leaseSeconds)));
      claimed();
      for (const { job, attempt } of batch) await this.dispatch(worker, job, attempt);
      if (batch.length < wanted) return;
    }
  }

  private async dispatch(worker: WorkerDispatcher, job: Claimed['job'], attempt: Claimed['attempt']): Promise<void> {
    const workerType = job.hints.worker_type;
    const dispatched = this.metrics.dispatch.startTimer();
    await worker
      .dispatch({
        jobId: job.id,
        projectId: job.project_id,
        attemptId: attempt.id,
        attemptNumber: attempt.attempt_number,
        leaseToken: attempt.lease_token,
        leaseExpiresAt: new Date(attempt.lease_expires_at!),
        workerType: typeof workerType === 'string' && workerType !== '' ? workerType : null,
      })
      .then(
        () => dispatched({ outcome: 'ok' }),
        (err) => {
          dispatched({ outcome: 'failed' });
          this.logger.error({ err, jobId: job.id }, 'dispatch failed; the lease will expire and the attempt be reaped');
        },
      );
  }

  private async reap(): Promise<void> {
    if (this.stopped) return;
    try {
      const reaped = await this.claims.reapExpired();
      if (reaped.length) this.logger.warn({ reaped }, 'expired leases reaped');
    } catch (err) {
      this.logger.error({ err }, 'reaping failed');
    }
  }
}
