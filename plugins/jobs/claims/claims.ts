import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { Conflict, LeaseLost, NotFound } from '../../../core/errors.ts';
import { refuseWorkflowRootClaim } from '../workflows/roots.ts';
import { JobRepository, toJob, type JobRow } from '../job/repository.ts';
import { unfinishedBlockers } from '../relations/blockers.ts';
import type { Failure } from '../lifecycle/system-events.ts';
import { GatesHeld, JobLifecycle, type AttemptOutcome, type Claimed } from '../lifecycle/lifecycle.ts';
import { AttemptRepository, toAttempt, type Attempt, type AttemptRow, type ResultStatus } from '../attempts/attempts.ts';
import { RunningQuota } from './running-quota.ts';

export { DEFAULT_MAX_ATTEMPTS, WAITING_BACKOFF_SECONDS, type AttemptOutcome, type Claimed } from '../lifecycle/lifecycle.ts';

export const DEFAULT_LEASE_SECONDS = 300;
export const MAX_LEASE_SECONDS = 86_400;

export interface ClaimOptions {
  leaseSeconds?: number;
  /** claimNext leaves jobs of these worker types (`hints.worker_type`, 'default' without one) ready: their workers are full. */
  skipWorkerTypes?: string[];
}
/** The `svc` object of a harness's json-result block. */
export interface AttemptResult {
  status: ResultStatus;
  summary?: string;
  reason?: string;
}
export interface Completion {
  lease_token: string;
  result: AttemptResult;
  result_json?: Record<string, unknown>;
  error?: string;
  /** A failed result that is not retried whatever `max_attempts` allows. */
  final?: boolean;
  /** The attempt's resolved git (core/ports/attempts.ts ResolvedGit), stored on it before it ends. */
  git?: Record<string, unknown> | null;
  /** A race's check command's outcome (core/ports/attempts.ts CheckResult), stored on the attempt before it ends. */
  check?: Record<string, unknown>;
}
export interface Reaped {
  job_id: string;
  attempt_id: string;
  phase: JobRow['phase'];
}

function leaseLost(attempt: AttemptRow, why: string): LeaseLost {
  return new LeaseLost(`lease lost: attempt ${attempt.attempt_number} (${attempt.id}) of job ${attempt.job_id}: ${why}`);
}

/**
 * The claimer and the rules of an attempt's life: claim (one job or a batch), heartbeat, release,
 * complete, reaping of expired leases. Each runs in a transaction after locking the job and, under
 * a lease, fencing the attempt; the moves themselves are JobLifecycle's.
 */
@injectable()
export class Claims {
  constructor(
    @inject(Tokens.ControlDb) private readonly db: Db, // claims and heartbeats are not starved by a pile-up of reads
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(AttemptRepository) private readonly attempts: AttemptRepository,
    @inject(JobLifecycle) private readonly lifecycle: JobLifecycle,
    @inject(RunningQuota) private readonly quota: RunningQuota,
  ) {}

  /**
   * Claims one ready job: not deferred, nothing unfinished it waits for, every gate free, and a
   * place in its org's running-attempt quota (429 naming the quota when there is none).
   */
  claim(jobId: string, owner: string, { leaseSeconds = DEFAULT_LEASE_SECONDS }: ClaimOptions = {}): Promise<Claimed> {
    return this.db.transaction(async (trx) => {
      const orgId = await this.quota.lockOrgOf(jobId, trx);
      const job = await this.locked(jobId, trx);
      if (job.phase !== 'ready') throw new Conflict(`job ${jobId} is ${job.phase}: only a ready job can be claimed`);
      if (job.defer_until && job.defer_until > new Date()) throw new Conflict(`job ${jobId} is deferred until ${job.defer_until.toISOString()}`);
      refuseWorkflowRootClaim(job);
      await this.requireUnblocked(job, trx);
      await this.quota.requirePlace(orgId, trx);
      return this.lifecycle.start(job, orgId, owner, leaseSeconds, trx);
    });
  }

  /**
   * Claims up to `limit` jobs for `owner` in priority then age order, skipping rows other claimers
   * hold (SKIP LOCKED), jobs whose gates are taken, and jobs of orgs at their running-attempt quota
   * (limits.org.running_attempts: they stay ready); safe with any number of concurrent callers.
   * Each round picks the next jobs in claim order (AttemptRepository.pick, row-locked), takes the
   * advisory locks of their orgs that are free (an org another claimer holds is left for the next
   * round: claimers never wait for each other), and then claims the picks that fit their orgs'
   * quotas in one statement (JobLifecycle.claimPicked), the gate-less ones at once; gated ones then
   * go one by one through `JobLifecycle.start` (advisory locks, job_gates) in a savepoint each.
   * Later rounds skip the projects of orgs found full or held. Gated and gate-less jobs compete for
   * the same picks in the same order, so priority order holds across both; the one trade-off: a
   * gated job that loses its gate to another claimer leaves its slot to the next round's picks.
   */
  claimNext(owner: string, limit: number, { leaseSeconds = DEFAULT_LEASE_SECONDS, skipWorkerTypes = [] }: ClaimOptions = {}): Promise<Claimed[]> {
    return this.db.transaction(async (trx) => {
      const claimed: Claimed[] = [];
      const passed: string[] = [];
      const skipProjects = new Set<string>();
      const locked = new Set<string>();
      while (claimed.length < limit) {
        const wanted = limit - claimed.length;
        const jobs = await this.attempts.pick(wanted, passed, [...skipProjects], skipWorkerTypes, trx);
        passed.push(...jobs.map((j) => j.id));
        const orgOf = await this.quota.orgsOf(
          jobs.map((j) => j.project_id),
          trx,
        );
        const unlocked = [...new Set(orgOf.values())].filter((o) => !locked.has(o));
        for (const org of await this.quota.tryLock(unlocked, trx)) locked.add(org);
        const eligible = jobs.flatMap((job) => {
          const orgId = orgOf.get(job.project_id);
          return orgId && locked.has(orgId) ? [{ job, orgId }] : [];
        });
        const picks = await this.lifecycle.claimPicked(eligible, owner, leaseSeconds, this.quota.limit, trx);
        const placed = new Set(picks.map((p) => p.job.id));
        // Held by another claimer, or full: the org's jobs stay ready; later rounds look past its projects.
        const full = new Set(eligible.filter((e) => !placed.has(e.job.id)).map((e) => e.orgId));
        for (const job of jobs) {
          const orgId = orgOf.get(job.project_id);
          if (!orgId || !locked.has(orgId) || full.has(orgId)) skipProjects.add(job.project_id);
        }
        for (const { job, attempt } of picks) {
          if (attempt) claimed.push({ job: toJob(job), attempt });
          else {
            // A savepoint: a gate taken meanwhile undoes this job's attempt only.
            const orgId = orgOf.get(job.project_id)!;
            const result = await trx
              .transaction((sp) => this.lifecycle.start(job, orgId, owner, leaseSeconds, sp))
              .catch((e) => {
                if (e instanceof GatesHeld) return null;
                throw e;
              });
            if (result) claimed.push(result);
          }
        }
        if (jobs.length < wanted) break;
      }
      return claimed;
    });
  }

  /** The claimer gives the job back: its attempt ends cancelled and the job is ready again. */
  release(jobId: string, attemptId: string, leaseToken: string): Promise<AttemptOutcome> {
    return this.db.transaction(async (trx) => {
      const { job, attempt } = await this.leased(jobId, attemptId, leaseToken, trx);
      return this.lifecycle.release(job, attempt, trx);
    });
  }

  /** Extends a live lease; a lost one (ended, other token, expired) is LeaseLost. */
  heartbeat(jobId: string, attemptId: string, leaseToken: string, leaseSeconds = DEFAULT_LEASE_SECONDS): Promise<Attempt> {
    return this.db.transaction(async (trx) => {
      const attempt = await this.fence(jobId, attemptId, leaseToken, trx);
      return toAttempt(await this.attempts.renew(attempt.id, leaseSeconds, trx));
    });
  }

  /** Ends a running attempt as failed for a reason the platform found (a budget exceeded), under its live lease. */
  terminate(jobId: string, attemptId: string, leaseToken: string, error: string, code: Failure['error_code']): Promise<AttemptOutcome> {
    return this.db.transaction(async (trx) => {
      const { job, attempt } = await this.leased(jobId, attemptId, leaseToken, trx);
      const result_json = { svc: { status: 'failed', reason: error }, error_code: code };
      return this.lifecycle.fail(job, attempt, { result_status: 'failed', result_summary: null, result_json, error }, trx, code);
    });
  }

  /** The end of an attempt as its worker reports it (with its resolved git), written in one transaction under the attempt's live lease. */
  complete(jobId: string, attemptId: string, completion: Completion): Promise<AttemptOutcome> {
    return this.db.transaction(async (trx) => {
      const { job, attempt } = await this.leased(jobId, attemptId, completion.lease_token, trx);
      if (completion.git) await this.attempts.setGit(attempt.id, completion.git, trx);
      if (completion.check) await this.attempts.setCheck(attempt.id, completion.check, trx);
      const { status, summary, reason } = completion.result;
      const reported = { result_status: status, result_summary: summary ?? null, result_json: completion.result_json ?? { svc: completion.result } };
      if (status === 'failed')
        return this.lifecycle.fail(job, attempt, { ...reported, error: completion.error ?? reason ?? 'failed' }, trx, 'ATTEMPT_FAILED', completion.final);
      return this.lifecycle.succeed(job, attempt, { ...reported, error: completion.error ?? null }, trx);
    });
  }

  /**
   * Leases still held by orchestrators of this host that are gone (a crash, a SIGKILL, a restart
   * under the same PID) end now instead of running out: the reaper retries their attempts at once.
   */
  async releaseDeadPredecessors(prefix: string, isDead: (owner: string) => boolean): Promise<string[]> {
    const dead = (await this.attempts.runningOwners(prefix, this.db)).filter(isDead);
    await this.attempts.expireLeasesOf(dead, this.db);
    return dead;
  }

  /** Running attempts whose lease expired were lost with their worker: their jobs are retried (JobLifecycle.workerLost). */
  reapExpired(limit = 100): Promise<Reaped[]> {
    return this.db.transaction(async (trx) => {
      const reaped: Reaped[] = [];
      for (const attempt of await this.attempts.expired(limit, trx)) {
        const job = await this.locked(attempt.job_id, trx);
        const outcome = await this.lifecycle.workerLost(job, attempt, trx);
        reaped.push({ job_id: job.id, attempt_id: attempt.id, phase: outcome.job.phase });
      }
      return reaped;
    });
  }

  /** The job row, locked for the transaction; NotFound when there is none. */
  async locked(jobId: string, trx: Db): Promise<JobRow> {
    const job = await this.jobs.lock(jobId, trx);
    if (!job) throw new NotFound(`job ${jobId} not found`);
    return job;
  }

  /** A Conflict naming every unfinished job that `job` waits for. */
  async requireUnblocked(job: JobRow, trx: Db): Promise<void> {
    const blockers = await unfinishedBlockers(trx, job.id);
    if (blockers.length) throw new Conflict(`job ${job.id} is blocked by ${blockers.map((b) => `${b.id} (${b.phase})`).join(', ')}`);
  }

  /** The attempt, row-locked, when `leaseToken` holds its live lease: fencing for every write of its runner (end, heartbeat, usage, phases). */
  async fence(jobId: string, attemptId: string, leaseToken: string, trx: Db): Promise<AttemptRow> {
    const found = await this.attempts.lock(jobId, attemptId, trx);
    if (!found) throw new LeaseLost(`attempt ${attemptId} of job ${jobId} not found`, { gone: true });
    const { lease_live: live, ...attempt } = found;
    if (attempt.status !== 'running') throw leaseLost(attempt, `the attempt is ${attempt.status}`);
    if (attempt.lease_token !== leaseToken) throw leaseLost(attempt, 'the lease token does not match');
    if (!live) throw leaseLost(attempt, `the lease expired at ${attempt.lease_expires_at!.toISOString()}`);
    return attempt;
  }

  /** The job (row-locked) and its attempt under a live lease; a job that is gone took the lease with it. */
  private async leased(jobId: string, attemptId: string, leaseToken: string, trx: Db): Promise<{ job: JobRow; attempt: AttemptRow }> {
    const job = await this.jobs.lock(jobId, trx);
    if (!job) throw new LeaseLost(`job ${jobId} not found`, { gone: true });
    return { job, attempt: await this.fence(jobId, attemptId, leaseToken, trx) };
  }
}
