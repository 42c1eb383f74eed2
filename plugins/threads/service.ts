import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { COORDINATION_KEY_PREFIX, type MessageKind } from '../../core/ports/threads.ts';
import {
  isCoordination,
  ThreadRepository,
  toThread,
  type AuthorType,
  type MessageFilters,
  type MessageRow,
  type Thread,
  type ThreadRow,
} from './repository.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import { JobGraphsToken, type JobGraphs } from '../../core/ports/jobs.ts';

export interface ThreadInput {
  key?: string;
  title?: string;
}

export interface MessageInput {
  kind?: MessageKind;
  body: string;
  job_id?: string;
  reply_to?: string;
  metadata?: Record<string, unknown>;
}

const authorOf = (p: Principal): { type: AuthorType; id: string } => ({ type: p.kind, id: p.id });

/** Threads and their messages; every read and write is scoped to the project the route authorized. */
@injectable()
export class ThreadService {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(ThreadRepository) private readonly threads: ThreadRepository,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(JobGraphsToken) private readonly jobs: JobGraphs,
  ) {}

  list(projectId: string, query: Pick<ListQuery, 'limit' | 'offset'> & { key?: string; job_id?: string }): Promise<Page<Thread>> {
    return this.threads.list(projectId, query);
  }

  async get(projectId: string, threadId: string): Promise<Thread> {
    return toThread(await this.require(projectId, threadId));
  }

  /**
   * A new thread, or with a key the project already has, that thread (`created` false): the same
   * request twice is one thread. A title that differs from the stored one is 409; a
   * `coord:job:<job_id>` key must name a job of the project (422).
   */
  async create(principal: Principal, projectId: string, input: ThreadInput): Promise<{ thread: Thread; created: boolean }> {
    await this.requireLiveProject(projectId);
    const key = input.key ?? null;
    const jobId = key?.startsWith(COORDINATION_KEY_PREFIX) ? key.slice(COORDINATION_KEY_PREFIX.length) : null;
    if (jobId) await this.requireJob(projectId, jobId, 'key');
    if (key) {
      const existing = await this.threads.byKey(projectId, key);
      if (existing) return { thread: toThread(sameTitle(existing, input)), created: false };
    }
    const author = authorOf(principal);
    const row = await this.threads.insert({
      project_id: projectId,
      key,
      title: input.title ?? (jobId ? `Coordination of the team of job ${jobId}` : null),
      job_id: jobId,
      created_by_type: author.type,
      created_by: author.id,
    });
    if (row) return { thread: toThread(row), created: true };
    // Another request created the key between our read and insert.
    return { thread: toThread(sameTitle((await this.threads.byKey(projectId, key!))!, input)), created: false };
  }

  /**
   * Appends a message as the caller (a job token posts as its job, and its job is the message's
   * job unless it names another). Coordination threads take status, directive, question and update
   * (default update); other threads also take message (their default).
   */
  async post(principal: Principal, projectId: string, threadId: string, input: MessageInput): Promise<MessageRow> {
    const thread = await this.require(projectId, threadId);
    await this.requireLiveProject(projectId);
    const coordination = isCoordination(thread);
    const kind = input.kind ?? (coordination ? 'update' : 'message');
    if (coordination && kind === 'message') {
      throw Boom.badData(`kind message is not used on coordination thread ${thread.id}: post a status, directive, question or update`);
    }
    const jobId = input.job_id ?? (principal.kind === 'job' ? principal.id : null);
    if (input.job_id) await this.requireJob(projectId, input.job_id, 'job_id');
    if (input.reply_to && !(await this.threads.message(thread.id, input.reply_to))) {
      throw Boom.badData(`reply_to: message ${input.reply_to} is not a message of thread ${thread.id}`);
    }
    const author = authorOf(principal);
    return this.db.transaction((trx) =>
      this.threads.append(
        thread.id,
        {
          kind,
          body: input.body,
          author_type: author.type,
          author_id: author.id,
          job_id: jobId,
          reply_to: input.reply_to ?? null,
          metadata: input.metadata ?? {},
        },
        trx,
      ),
    );
  }

  async messages(projectId: string, threadId: string, filters: MessageFilters): Promise<Page<MessageRow>> {
    await this.require(projectId, threadId);
    return this.threads.messages(threadId, filters);
  }

  private async require(projectId: string, threadId: string): Promise<ThreadRow> {
    const thread = await this.threads.byId(projectId, threadId);
    if (!thread) throw Boom.notFound(`thread ${threadId} not found`);
    return thread;
  }

  private async requireLiveProject(projectId: string): Promise<void> {
    const project = await this.projects.byId(projectId);
    if (!project || project.deleted) throw Boom.badData(`project ${projectId} is deleted`);
  }

  private async requireJob(projectId: string, jobId: string, field: string): Promise<void> {
    const [job] = await this.jobs.read([jobId]);
    if (job?.project_id !== projectId) throw Boom.badData(`${field}: job ${jobId} is not a job of project ${projectId}`);
  }
}

/** Ensure semantics: a title given must be the stored one. */
function sameTitle(existing: ThreadRow, input: ThreadInput): ThreadRow {
  if (input.title !== undefined && input.title !== existing.title) {
    throw Boom.conflict(`thread ${existing.key} already exists with another title (${JSON.stringify(existing.title)}); leave title out to reuse it`);
  }
  return existing;
}
