import type { Db } from '../../../core/db/knex.ts';
import { emitEvent } from '../../../core/events/emit.ts';
import { isObject } from '../../../core/is-object.ts';
import type { JobPhaseListener } from '../../../core/ports/jobs.ts';
import type { JobRow } from '../job/repository.ts';
import type { AttemptRow } from '../attempts/attempts.ts';
import { latestSuccessfulAttempts } from './latest-success.ts';

type JobFacts = Pick<JobRow, 'id' | 'project_id' | 'assignee' | 'env_name' | 'hints'>;

const text = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

/** The caller's ids for the change that created the job, carried on the event and in its payload. */
const requestIds = (hints: Record<string, unknown>) => ({ mutation_id: text(hints.mutation_id), request_id: text(hints.request_id) });

/** What ran the job: a pipeline step's or workflow step's execution kind, else an agent. */
function executionType(hints: Record<string, unknown>): string {
  const step = isObject(hints.step) ? hints.step : {};
  return text(hints.execution_type) ?? text(step.kind) ?? 'agent';
}

/** The pipeline, workflow and step a job belongs to: what triggers read for scope and anti-recursion. */
function origin(hints: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of ['pipeline_name', 'pipeline_run_id', 'workflow_name', 'step_name']) {
    const value = text(hints[key]);
    if (value) out[key] = value;
  }
  return out;
}

/** `system.job.attempt.completed`, in the transaction that ended the attempt (however it ended); `threadId`: the coordination thread its status went to. */
export async function emitAttemptCompleted(trx: Db, job: JobFacts, attempt: AttemptRow, threadId?: string): Promise<void> {
  const coordination = isObject(job.hints.coordination) ? job.hints.coordination : {};
  await emitEvent(trx, {
    project_id: job.project_id,
    type: 'system.job.attempt.completed',
    source: 'system',
    actor_type: 'system',
    env_name: job.env_name,
    payload: {
      job_id: job.id,
      attempt_id: attempt.id,
      assignee: attempt.lease_owner ?? job.assignee,
      thread_id: threadId ?? text(coordination.thread_id),
      execution_type: executionType(job.hints),
      status: attempt.status,
      duration_ms: attempt.ended_at ? new Date(attempt.ended_at).getTime() - new Date(attempt.started_at).getTime() : null,
    },
  });
}

export interface Failure {
  error_message: string;
  error_code: 'ATTEMPT_FAILED' | 'LEASE_EXPIRED' | 'BUDGET_EXCEEDED';
  failures: number;
  max_attempts: number;
}

/** `system.job.failed`, in the transaction where a failed attempt leaves no attempt to retry. */
export async function emitJobFailed(trx: Db, job: JobFacts, attempt: AttemptRow, failure: Failure): Promise<void> {
  const exit = isObject(attempt.result_json) ? attempt.result_json.exit_code : undefined;
  const ids = requestIds(job.hints);
  await emitEvent(trx, {
    project_id: job.project_id,
    type: 'system.job.failed',
    source: 'system',
    actor_type: 'system',
    env_name: job.env_name,
    ...ids,
    payload: {
      job_id: job.id,
      attempt_id: attempt.id,
      error_message: failure.error_message,
      error_code: failure.error_code,
      exit_code: typeof exit === 'number' ? exit : null,
      ...ids,
      metadata: {
        project_id: job.project_id,
        attempt_number: attempt.attempt_number,
        failed_attempts: failure.failures,
        max_attempts: failure.max_attempts,
        ...origin(job.hints),
      },
    },
  });
}

/**
 * `system.job.completed` for each job that reached done (after its last attempt, an approval, or its
 * steps), in the transaction that moved it: subscriptions and triggers name it `job.completed`.
 * `attempt_id` and `result_summary` are those of its latest successful attempt, null when none ran.
 */
export const emitJobsCompleted: JobPhaseListener = async (jobs, trx) => {
  const done = jobs.filter((j) => j.phase === 'done');
  if (done.length === 0) return;
  const attempts: { job_id: string; id: string; result_summary: string | null }[] = await latestSuccessfulAttempts(
    trx,
    done.map((j) => j.id),
  ).select('job_id', 'id', 'result_summary');
  const latest = new Map(attempts.map((a) => [a.job_id, a]));
  for (const job of done) {
    const attempt = latest.get(job.id);
    const ids = requestIds(job.hints);
    await emitEvent(trx, {
      project_id: job.project_id,
      type: 'system.job.completed',
      source: 'system',
      actor_type: 'system',
      env_name: job.env_name,
      ...ids,
      payload: {
        job_id: job.id,
        attempt_id: attempt?.id ?? null,
        status: job.phase,
        result_summary: attempt?.result_summary ?? null,
        close_reason: job.close_reason,
        ...ids,
        metadata: { project_id: job.project_id, ...origin(job.hints) },
      },
    });
  }
};
