import type { Logger } from 'pino';
import { inject, injectable, type InjectionToken } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Config } from '../../../core/config/schema.ts';
import type { Db } from '../../../core/db/knex.ts';
import { Conflict, Invalid, NotFound, SecretMissing, UpstreamFailed } from '../../../core/errors.ts';
import { isObject } from '../../../core/is-object.ts';
import { repoPath } from '../../../core/git-addresses.ts';
import { HostApiError } from '../../../core/ports/integrations.ts';
import type { PullRequestEvent, PullRequestFeedback } from '../../../core/ports/jobs.ts';
import type { SecretResolver } from '../../../core/ports/secrets.ts';
import type { VcsHost } from '../../../core/ports/vcshost.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../../core/ports/directory.ts';
import { JobRepository, toJob, type Job, type JobRow, type PullRequestState } from '../job/repository.ts';
import { latestSuccessfulAttempts } from '../lifecycle/latest-success.ts';
import { Review } from '../claims/review.ts';

/** The code host and the secrets, looked up per call: both may be configured or loaded after the jobs plugin. */
interface Hosts {
  vcshost: () => VcsHost | null;
  secrets: () => SecretResolver | null;
}
export const PullRequestHosts = Symbol('PullRequestHosts') as InjectionToken<Hosts>;

export interface OpenPullRequest {
  title?: string;
  body?: string;
  base?: string;
  draft?: boolean;
}

/**
 * Pull requests from finished work: a job in review or done whose work was pushed to a branch is
 * proposed to the project's branch on the code host, and the host's verdict comes back to it (merged
 * or approved: the job is done; changes requested: the job goes back to ready with the review as its
 * rejection, so the next attempt reads it in its context).
 */
@injectable()
export class PullRequests implements PullRequestFeedback {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(Review) private readonly review: Review,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(PullRequestHosts) private readonly hosts: Hosts,
  ) {}

  /** 201 with the job when opened now; 200 with the job when it already has one (nothing is opened twice). */
  async open(jobId: string, actorId: string, input: OpenPullRequest): Promise<{ created: boolean; job: Job }> {
    const row = await this.jobs.byId(jobId);
    if (!row) throw new NotFound(`job ${jobId} not found`);
    const job = toJob(row);
    if (job.pull_request) return { created: false, job };
    if (job.phase !== 'review' && job.phase !== 'done')
      throw new Conflict(`job ${jobId} is ${job.phase}: a pull request is opened from work in review or done`);
    const git = job.resolved_git ?? {};
    const head = typeof git.resolved_branch === 'string' ? git.resolved_branch : null;
    if (git.pushed !== true || !head)
      throw new Invalid(`job ${jobId}'s work was not pushed to a branch: run it with git.push (on_success or always) to open a pull request from it`);
    const host = this.hosts.vcshost();
    if (!host) throw new Invalid('no code host is configured: set adapters.vcshost to open pull requests');
    const project = (await this.projects.byId(job.project_id))!;
    const repo = repoPath(project.repo_url);
    if (!repo) throw new Invalid(`project ${project.id}'s repository (${project.repo_url ?? 'none'}) is not owner/name on a code host`);
    const token = await this.token(row);
    let opened;
    try {
      opened = await host.createPullRequest({
        repo,
        title: input.title ?? job.title,
        body: input.body ?? (await this.defaultBody(job)),
        head,
        base: input.base ?? project.branch,
        draft: input.draft,
        ...(token ? { token } : {}),
      });
    } catch (err) {
      if (!(err instanceof HostApiError)) throw err;
      // The host's refusal of what was asked (no such branch, a PR already open) is the caller's to fix; no answer is the host's.
      if (err.status >= 400 && err.status < 500) throw new Invalid(`the code host refused the pull request: ${err.message}`);
      throw new UpstreamFailed(`the code host did not open the pull request: ${err.message}`);
    }
    const now = new Date().toISOString();
    const state: PullRequestState = {
      number: opened.number,
      url: opened.url,
      state: 'open',
      head,
      base: opened.base,
      review: null,
      opened_by: actorId,
      opened_at: now,
      updated_at: now,
    };
    return this.db.transaction(async (trx) => {
      const locked = (await this.jobs.lock(jobId, trx))!;
      // Two callers at once: the first one's pull request is the job's (the host refuses a second for the same branch anyway).
      if (locked.pull_request) return { created: false, job: toJob(locked) };
      return { created: true, job: toJob(await this.jobs.update(jobId, { pull_request: state }, trx)) };
    });
  }

  async observe(event: PullRequestEvent): Promise<void> {
    const p = event.payload_json;
    const number = typeof p.number === 'number' ? p.number : null;
    if (number === null) return;
    const verdict = await this.db.transaction(async (trx) => {
      const job = await this.jobs.lockByPullRequest(event.project_id, number, trx);
      if (!job?.pull_request) return null;
      const next = { ...job.pull_request, ...changesOf(event), updated_at: new Date().toISOString() };
      await this.jobs.update(job.id, { pull_request: next }, trx);
      return { job, next };
    });
    if (!verdict) return;
    const { job, next } = verdict;
    const actor = event.actor_id ?? 'vcshost';
    const review = isObject(p.review) ? p.review : {};
    const text = typeof review.body === 'string' && review.body.trim() ? review.body.trim() : null;
    try {
      if (event.type === 'vcshost.pull_request' && next.state === 'merged' && job.phase === 'review')
        await this.review.approve(job.id, actor, `pull request #${number} merged`);
      else if (event.type === 'vcshost.pull_request_review' && next.review === 'approved' && job.phase === 'review')
        await this.review.approve(job.id, actor, text ?? `pull request #${number} approved`);
      else if (event.type === 'vcshost.pull_request_review' && next.review === 'changes_requested' && job.phase === 'review')
        await this.review.sendBack(job.id, actor, text ?? `changes requested on pull request #${number}`);
    } catch (err) {
      // A redelivery, or a person who acted first: the job has moved on, and the verdict is only recorded.
      if (!(err instanceof Conflict)) throw err;
      this.logger.info({ job: job.id, number, reason: err.message }, 'pull request verdict recorded, the job had moved on');
    }
  }

  /** The code-host token the job's pushes use (worker.git.token_secret), else the adapter's own. */
  private async token(job: JobRow): Promise<string | undefined> {
    const secrets = this.hosts.secrets();
    if (!secrets) return undefined;
    try {
      return await secrets.resolve(this.config.worker.git.token_secret, { projectId: job.project_id, userId: job.created_by });
    } catch (err) {
      if (err instanceof SecretMissing) return undefined;
      throw err;
    }
  }

  private async defaultBody(job: Job): Promise<string> {
    const latest = await latestSuccessfulAttempts(this.db, [job.id]).first('result_summary');
    const summary = typeof latest?.result_summary === 'string' ? latest.result_summary : '';
    return [summary, `Opened by svc from job ${job.id}.`].filter(Boolean).join('\n\n');
  }
}

/** What a delivery changes on the stored pull request. */
function changesOf(event: PullRequestEvent): Partial<PullRequestState> {
  const p = event.payload_json;
  if (event.type === 'vcshost.pull_request_review') {
    const state = isObject(p.review) && typeof p.review.state === 'string' ? p.review.state.toLowerCase() : null;
    return state === 'approved' || state === 'changes_requested' || state === 'commented' ? { review: state } : {};
  }
  const pr = isObject(p.pull_request) ? p.pull_request : {};
  if (p.action === 'closed') return { state: pr.merged === true ? 'merged' : 'closed' };
  if (p.action === 'reopened') return { state: 'open' };
  return {};
}
