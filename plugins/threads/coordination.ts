import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { AttemptCompletionNote, EndedAttempt } from '../../core/ports/attempts.ts';
import { coordinationKey, type CoordinatedJob, type CoordinationInbox, type CoordinationThreads } from '../../core/ports/threads.ts';
import { ThreadRepository, type ThreadRow } from './repository.ts';
import { isObject } from '../../core/is-object.ts';

/** The inbox shows at most this many of the latest messages (open questions come from the whole thread). */
export const INBOX_MESSAGES = 200;
const SUMMARY_CHARS = 4000;

const text = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

/** `hints.coordination.thread_id`, when the job names one. */
export const hintedThread = (hints: Record<string, unknown>): string | null => (isObject(hints.coordination) ? text(hints.coordination.thread_id) : null);

/**
 * Which thread a job coordinates through (`hints.coordination.thread_id`, else its parent's
 * `coord:job:<parent_id>` thread when one was created), its inbox for the worker, the status
 * post when one of its attempts ends, and the check of the hint at job creation.
 */
@injectable()
export class Coordination implements CoordinationThreads {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(ThreadRepository) private readonly threads: ThreadRepository,
  ) {}

  /** A hinted thread of another project (or none) is no thread: the hint was checked at creation, this is the fence. */
  async threadOf(job: CoordinatedJob, trx: Db = this.db): Promise<ThreadRow | null> {
    const hinted = hintedThread(job.hints);
    if (hinted) return (await this.threads.byId(job.project_id, hinted, trx)) ?? null;
    if (!job.parent_id) return null;
    return (await this.threads.byKey(job.project_id, coordinationKey(job.parent_id), trx)) ?? null;
  }

  async inbox(job: CoordinatedJob): Promise<CoordinationInbox | null> {
    const thread = await this.threadOf(job);
    if (!thread) return null;
    const [messages, open] = await Promise.all([this.threads.latest(thread.id, INBOX_MESSAGES), this.threads.openQuestions(thread.id)]);
    return {
      thread: { id: thread.id, key: thread.key, title: thread.title, message_count: thread.message_count },
      messages,
      open_questions: open,
    };
  }

  /** The status summary of an ended attempt, in the transaction that ended it. */
  readonly attemptCompleted = async ({ job, attempt }: EndedAttempt, trx: Db): Promise<AttemptCompletionNote> => {
    const thread = await this.threadOf(job, trx);
    if (!thread) return {};
    const svc = isObject(attempt.result_json) && isObject(attempt.result_json.svc) ? attempt.result_json.svc : {};
    const summary = text(attempt.result_summary) ?? text(svc.summary);
    const reason = text(svc.reason) ?? text(attempt.error);
    const outcome = attempt.result_status === 'waiting' ? 'is waiting' : attempt.status === 'cancelled' ? 'was cancelled' : attempt.status;
    const detail = attempt.status === 'failed' || attempt.status === 'cancelled' ? (reason ?? summary) : (summary ?? reason);
    const body = `Attempt ${attempt.attempt_number} of job ${job.id} (${job.title}) ${outcome}${detail ? `: ${detail}` : '.'}`.slice(0, SUMMARY_CHARS);
    const duration = attempt.ended_at ? new Date(attempt.ended_at).getTime() - new Date(attempt.started_at).getTime() : null;
    await this.threads.append(
      thread.id,
      {
        kind: 'status',
        body,
        author_type: 'job',
        author_id: job.id,
        job_id: job.id,
        reply_to: null,
        metadata: {
          posted_by: 'svc',
          attempt_id: attempt.id,
          attempt_number: attempt.attempt_number,
          status: attempt.status,
          result_status: attempt.result_status,
          summary,
          reason,
          duration_ms: duration,
        },
      },
      trx,
    );
    return { thread_id: thread.id };
  };

  /** `hints.coordination.thread_id` must name a thread of the job's project. */
  readonly checkRequest = async (projectId: string, { hints }: Record<string, unknown>): Promise<void> => {
    if (!isObject(hints) || !isObject(hints.coordination) || hints.coordination.thread_id === undefined) return;
    const id = hints.coordination.thread_id;
    if (typeof id !== 'string' || !(await this.threads.byId(projectId, id))) {
      throw Boom.badData(`hints.coordination.thread_id: ${JSON.stringify(id)} is not a thread of project ${projectId}`);
    }
  };
}
