import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { DependencyContainer } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { RoleService } from '../../../core/roles.ts';
import { WorkerDispatcherToken, type WorkerDispatcher } from '../../../core/ports/worker.ts';
import { Passes } from '../../../core/passes.ts';
import { Claims } from './claims.ts';
import { JobWakeups } from '../lifecycle/wakeups.ts';

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
export class JobDispatcher implements RoleService {
  readonly name = 'job-dispatcher';
  private readonly owner = `orchestrator:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly claims: Claims;
  private readonly logger: Logger;
  private readonly databaseUrl: string;
  private worker: WorkerDispatcher | null = null;
  private stopped = false;
  private readonly passes = new Passes(() => this.pass(), (err) => this.logger.error({ err }, 'claim pass failed'));

  constructor(private readonly container: DependencyContainer) {
    this.claims = container.resolve(Claims);
    this.logger = container.resolve(Tokens.Logger);
    this.databaseUrl = container.resolve(Tokens.DatabaseUrl);
  }

  async start(): Promise<void> {
    this.worker = this.container.isRegistered(WorkerDispatcherToken, true) ? this.container.resolve(WorkerDispatcherToken) : null;
    if (!this.worker) this.logger.info('no worker dispatcher registered: ready jobs wait for external claims');
    else {
      await this.passes.wakeOn(this.container.resolve(JobWakeups), this.databaseUrl, this.logger, POLL_EVERY_MS);
      this.passes.every(POLL_EVERY_MS);
      this.passes.wake();
    }
    this.passes.every(REAP_EVERY_MS, () => void this.reap());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.passes.stop();
  }

  private async pass(): Promise<void> {
    const worker = this.worker!;
    for (let room = worker.capacity(); room > 0 && !this.stopped; room = worker.capacity()) {
      const batch = await this.claims.claimNext(this.owner, Math.min(room, MAX_BATCH), { skipWorkerTypes: worker.fullTypes?.() ?? [] });
      for (const { job, attempt } of batch) {
        const workerType = job.hints.worker_type;
        await worker
          .dispatch({
            jobId: job.id, projectId: job.project_id, attemptId: attempt.id, attemptNumber: attempt.attempt_number,
            leaseToken: attempt.lease_token, leaseExpiresAt: new Date(attempt.lease_expires_at!),
            workerType: typeof workerType === 'string' && workerType !== '' ? workerType : null,
          })
          .catch((err) => this.logger.error({ err, jobId: job.id }, 'dispatch failed; the lease will expire and the attempt be reaped'));
      }
      if (batch.length < Math.min(room, MAX_BATCH)) return;
    }
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
