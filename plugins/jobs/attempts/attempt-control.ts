import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import type { JobPhase } from '../../../core/ports/jobs.ts';
import {
  type AttemptCompletion,
  type AttemptDiff,
  type AttemptControl as AttemptControlPort,
  type AttemptLease,
  type AttemptWork,
  type LogLine,
  type RunnerEventType,
  type UsageCall,
  type WorkerSystemEventType,
} from '../../../core/ports/attempts.ts';
import { emitEvent } from '../../../core/events/emit.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../../core/ports/directory.ts';
import { Claims } from '../claims/claims.ts';
import { Receipts } from '../receipts/receipts.ts';
import { AttemptLogs } from '../logs/attempt-logs.ts';
import { AttemptDiffs } from '../diffs/diffs.ts';
import { finishedRunSteps, runIdOf } from '../workflows/run-steps.ts';
import { RaceLaneRepository } from '../races/race-lanes.ts';
import { laneWork } from '../races/race-work.ts';

/** The jobs domain's side of running an attempt, for the worker in this process (core/ports/attempts.ts). */
@injectable()
export class AttemptControl implements AttemptControlPort {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Claims) private readonly claims: Claims,
    @inject(Receipts) private readonly receipts: Receipts,
    @inject(AttemptLogs) private readonly logs: AttemptLogs,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(AttemptDiffs) private readonly diffs: AttemptDiffs,
    @inject(RaceLaneRepository) private readonly lanes: RaceLaneRepository,
  ) {}

  async load(jobId: string, attemptId: string): Promise<AttemptWork | null> {
    const job = await this.db('jobs')
      .where({ id: jobId })
      .first(
        'id',
        'project_id',
        'parent_id',
        'title',
        'description',
        'phase',
        'hints',
        'git',
        'workspace',
        'env_name',
        'harness',
        'env_overrides',
        'resource_refs',
        'created_by',
      );
    if (!job) return null;
    const [attempt, project, steps] = await Promise.all([
      this.db('job_attempts as a')
        .where({ 'a.id': attemptId, 'a.job_id': jobId })
        .first(
          'a.id',
          'a.attempt_number',
          'a.status',
          'a.race_lane',
          // the failed attempts since the last one that did not fail
          this.db.raw(`(SELECT count(*)::int FROM job_attempts p WHERE p.job_id = a.job_id AND p.attempt_number < a.attempt_number AND p.status = 'failed'
          AND p.attempt_number > COALESCE((SELECT max(q.attempt_number) FROM job_attempts q WHERE q.job_id = a.job_id AND q.attempt_number < a.attempt_number AND q.status <> 'failed'), 0)) AS failed_before`),
        ),
      this.projects.byId(job.project_id),
      finishedRunSteps(this.db, job),
    ]);
    const runId = runIdOf(job);
    if (!attempt || !project) return null;
    const { race_lane: lane, ...own } = attempt;
    const work: AttemptWork = { job, attempt: own, project, run: runId ? { id: runId, steps } : null };
    if (lane === null) return work;
    const raced = await this.lanes.lane(jobId, lane);
    return raced ? { ...laneWork(work, raced.variant), check_command: raced.check_command } : work;
  }

  async heartbeat(lease: AttemptLease, leaseSeconds?: number): Promise<Date> {
    const attempt = await this.claims.heartbeat(lease.jobId, lease.attemptId, lease.leaseToken, leaseSeconds);
    return attempt.lease_expires_at!;
  }

  /** One transaction: the resolved git is stored under the lease, then the attempt ends (the job's promotion finds the git when it succeeded). */
  async complete(lease: AttemptLease, completion: AttemptCompletion): Promise<JobPhase> {
    const { result, result_json, error, final, git, check } = completion;
    const outcome = await this.claims.complete(lease.jobId, lease.attemptId, {
      lease_token: lease.leaseToken,
      result,
      result_json,
      error,
      final,
      git: git ? { ...git } : null,
      ...(check ? { check: { ...check } } : {}),
    });
    return outcome.job.phase;
  }

  async release(lease: AttemptLease): Promise<void> {
    await this.claims.release(lease.jobId, lease.attemptId, lease.leaseToken);
  }

  async recordUsage(lease: AttemptLease, calls: UsageCall[]): Promise<{ budgetExceeded: string | null }> {
    if (calls.length === 0) return { budgetExceeded: null };
    const recorded = await this.receipts.recordUsage(lease.jobId, lease.attemptId, lease.leaseToken, calls);
    return { budgetExceeded: recorded.budget_exceeded ?? null };
  }

  gateModelCall(attempt: { jobId: string; attemptId: string }): Promise<string | null> {
    return this.receipts.gateCall(attempt.jobId, attempt.attemptId);
  }

  async recordPhases(lease: AttemptLease, phases: { name: string; started_at: Date; ended_at: Date }[]): Promise<void> {
    if (phases.length) await this.receipts.recordPhases(lease.jobId, lease.attemptId, lease.leaseToken, phases);
  }

  recordDiff(lease: AttemptLease, diff: AttemptDiff): Promise<void> {
    return this.diffs.record(lease.jobId, lease.attemptId, lease.leaseToken, diff);
  }

  appendLogs(jobId: string, attemptId: string, lines: LogLine[]): Promise<void> {
    return this.logs.append(jobId, attemptId, lines);
  }

  async runnerEvent(lease: AttemptLease, type: RunnerEventType, payload: Record<string, unknown>): Promise<void> {
    const job = await this.db('jobs').where({ id: lease.jobId }).first('project_id');
    if (!job) return;
    await emitEvent(this.db, {
      project_id: job.project_id,
      type,
      source: 'runner',
      actor_type: 'system',
      payload: withCamelCase({ attempt_id: lease.attemptId, job_id: lease.jobId, ...payload }),
    });
  }

  /** Fenced: a worker that lost its lease records nothing more about the attempt. */
  async systemEvent(lease: AttemptLease, type: WorkerSystemEventType, payload: Record<string, unknown>): Promise<void> {
    await this.db.transaction(async (trx) => {
      await this.claims.fence(lease.jobId, lease.attemptId, lease.leaseToken, trx);
      const job = await trx('jobs').where({ id: lease.jobId }).first('project_id', 'env_name');
      await emitEvent(trx, {
        project_id: job.project_id,
        type,
        source: 'system',
        actor_type: 'system',
        env_name: job.env_name,
        payload: { job_id: lease.jobId, attempt_id: lease.attemptId, ...payload },
      });
    });
  }
}

/**
 * The interface lists runner payloads in snake_case and in a camelCase form: each snake_case key
 * also appears camelCased (attemptId, jobId, exitCode), so a trigger condition written either way matches.
 */
function withCamelCase(payload: Record<string, unknown>): Record<string, unknown> {
  const out = { ...payload };
  for (const [key, value] of Object.entries(payload)) if (key.includes('_')) out[key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = value;
  return out;
}
