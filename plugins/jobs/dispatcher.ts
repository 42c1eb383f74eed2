import { hostname } from 'node:os';
import { Passes } from '../../core/passes.ts';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { DependencyContainer } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { RoleService } from '../../core/roles.ts';
import { WorkerDispatcherToken, type WorkerDispatcher } from '../../core/ports/worker.ts';
import { listen, type Listening } from '../../core/db/listen.ts';
import { Claims } from './claims.ts';
import { JobWakeups, WAKE_CHANNEL } from './wakeups.ts';

/** The backstop when a notification is missed (or a deferral simply runs out). */
const POLL_EVERY_MS = 1_000;
const REAP_EVERY_MS = 5_000;
const MAX_BATCH = 32;

/**
 * The orchestrator's claimer: woken by NOTIFY on svc_jobs (and polled every second), it claims
 * ready jobs for as many attempts as the worker dispatcher accepts and hands each over; it also
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
  private listening: Listening | null = null;
  private timers: NodeJS.Timeout[] = [];
  private stopped = false;
  private readonly passes = new Passes(() => this.pass(), (err) => this.logger.error({ err }, 'claim pass failed'));
  private unsubscribe: () => void = () => undefined;

  constructor(private readonly container: DependencyContainer) {
    this.claims = container.resolve(Claims);
    this.logger = container.resolve(Tokens.Logger);
    this.databaseUrl = container.resolve(Tokens.DatabaseUrl);
  }

  async start(): Promise<void> {
    this.worker = this.container.isRegistered(WorkerDispatcherToken, true) ? this.container.resolve(WorkerDispatcherToken) : null;
    if (!this.worker) this.logger.info('no worker dispatcher registered: ready jobs wait for external claims');
    else {
      this.unsubscribe = this.container.resolve(JobWakeups).onWake(() => this.wake());
      await this.listen();
    }
    this.timers.push(setInterval(() => this.wake(), POLL_EVERY_MS), setInterval(() => void this.reap(), REAP_EVERY_MS));
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe();
    for (const t of this.timers) clearInterval(t);
    await this.passes.stop();
    await this.listening?.close();
  }

  /** Runs a pass now, or right after the one in progress. */
  wake(): void {
    if (this.stopped || !this.worker) return;
    this.passes.wake();
  }

  private async pass(): Promise<void> {
    const worker = this.worker!;
    for (let room = worker.capacity(); room > 0 && !this.stopped; room = worker.capacity()) {
      const batch = await this.claims.claimNext(this.owner, Math.min(room, MAX_BATCH));
      for (const { job, attempt } of batch) {
        await worker
          .dispatch({
            jobId: job.id, projectId: job.project_id, attemptId: attempt.id, attemptNumber: attempt.attempt_number,
            leaseToken: attempt.lease_token, leaseExpiresAt: new Date(attempt.lease_expires_at!),
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

  /** A dedicated connection for LISTEN; on loss it reconnects, and the poll covers the gap. */
  private async listen(): Promise<void> {
    this.listening = await listen(this.databaseUrl, WAKE_CHANNEL, () => this.wake(), this.logger, POLL_EVERY_MS);
  }
}
