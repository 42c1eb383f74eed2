import type { Logger } from 'pino';
import type { ClaimedAttempt } from '../../core/ports/worker.ts';
import { CAPACITY_SUBJECT, type DispatchTokens } from './dispatch-token.ts';

export interface RemoteWorkerOptions {
  type: string;
  /** Base URL of a `svc serve --roles worker` process. */
  url: string;
  tokens: DispatchTokens;
  logger: Logger;
  timeoutMs: number;
  /** After a refusal or a failed call, the worker is asked again (capacity) no sooner than this. */
  retryMs: number;
}

/** The wire form of a dispatch (POST /worker/attempts). */
export interface DispatchBody {
  job_id: string;
  project_id: string;
  attempt_id: string;
  attempt_number: number;
  lease_token: string;
  lease_expires_at: string;
  worker_type: string | null;
  api_url: string | null;
}

export const toDispatchBody = (a: ClaimedAttempt): DispatchBody => ({
  job_id: a.jobId,
  project_id: a.projectId,
  attempt_id: a.attemptId,
  attempt_number: a.attemptNumber,
  lease_token: a.leaseToken,
  lease_expires_at: a.leaseExpiresAt.toISOString(),
  worker_type: a.workerType ?? null,
  api_url: a.apiUrl ?? null,
});

export const fromDispatchBody = (b: DispatchBody): ClaimedAttempt => ({
  jobId: b.job_id,
  projectId: b.project_id,
  attemptId: b.attempt_id,
  attemptNumber: b.attempt_number,
  leaseToken: b.lease_token,
  leaseExpiresAt: new Date(b.lease_expires_at),
  workerType: b.worker_type,
  apiUrl: b.api_url,
});

/**
 * One worker type served by a remote worker process. Its room is what the worker last said (a
 * dispatch's 202 or a capacity answer); while it is 0 (full, refusing, unreachable, or not asked yet)
 * the worker's capacity is asked again at most every `retryMs`, so a full or absent worker costs
 * one small call per interval and no claims.
 */
export class RemoteWorker {
  private room = 0;
  private askedAt = 0;
  private asking: Promise<void> | null = null;

  constructor(private readonly opts: RemoteWorkerOptions) {}

  get type(): string {
    return this.opts.type;
  }

  capacity(): number {
    if (this.room === 0) this.askCapacity();
    return this.room;
  }

  /** True when the worker took the attempt; false when it refused or could not be reached (the caller gives the job back). */
  async dispatch(attempt: ClaimedAttempt): Promise<boolean> {
    const { type, url, logger } = this.opts;
    const res = await this.call('POST', '/worker/attempts', attempt.attemptId, toDispatchBody(attempt)).catch((err: Error) => err);
    if (res instanceof Error) {
      logger.warn({ workerType: type, url, jobId: attempt.jobId, err: res.message }, 'remote worker unreachable; the job is given back');
      return this.refused();
    }
    const body = (await res.json().catch(() => null)) as { capacity?: unknown; message?: unknown } | null;
    if (res.status === 202) {
      this.room = typeof body?.capacity === 'number' ? Math.max(0, body.capacity) : Math.max(0, this.room - 1);
      return true;
    }
    const why = `${res.status}${typeof body?.message === 'string' ? `: ${body.message}` : ''}`;
    if (res.status === 429 || res.status === 503)
      logger.info({ workerType: type, url, jobId: attempt.jobId, status: res.status }, 'remote worker is full; the job is given back');
    else logger.error({ workerType: type, url, jobId: attempt.jobId, why }, 'remote worker refused the dispatch; the job is given back');
    return this.refused();
  }

  private refused(): false {
    this.room = 0;
    this.askedAt = Date.now();
    return false;
  }

  private askCapacity(): void {
    if (this.asking || Date.now() - this.askedAt < this.opts.retryMs) return;
    this.askedAt = Date.now();
    this.asking = this.call('GET', '/worker/capacity', CAPACITY_SUBJECT)
      .then(async (res) => {
        const body = (await res.json().catch(() => null)) as { capacity?: unknown } | null;
        if (res.status === 200 && typeof body?.capacity === 'number') this.room = Math.max(0, body.capacity);
        else this.opts.logger.warn({ workerType: this.opts.type, url: this.opts.url, status: res.status }, 'remote worker refused the capacity question');
      })
      .catch((err: Error) => this.opts.logger.debug({ workerType: this.opts.type, url: this.opts.url, err: err.message }, 'remote worker unreachable'))
      .finally(() => {
        this.askedAt = Date.now();
        this.asking = null;
      });
  }

  private async call(method: 'GET' | 'POST', path: string, subject: string, body?: DispatchBody): Promise<Response> {
    const token = await this.opts.tokens.sign(subject);
    return fetch(`${this.opts.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(this.opts.timeoutMs),
    });
  }
}
