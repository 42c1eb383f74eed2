import type { InjectionToken } from 'tsyringe';
import type { Db } from '../db/knex.ts';
import type { Creator } from './launchers.ts';
import { Registry } from '../registry.ts';

export type JobPhase = 'idea' | 'backlog' | 'ready' | 'active' | 'review' | 'done' | 'cancelled';

/** A job whose phase just changed, as other domains see it. */
export interface JobPhaseChange {
  id: string;
  project_id: string;
  phase: JobPhase;
  close_reason: string | null;
  env_name: string | null;
  hints: Record<string, unknown>;
}

export type JobPhaseListener = (jobs: JobPhaseChange[], trx: Db) => Promise<void>;

/**
 * Domains that follow jobs (pipeline runs) register here; the jobs domain calls every listener
 * inside the transaction that changed the phases, so what follows a job commits with it.
 * Registered per container by the jobs plugin.
 */
export class JobPhaseListeners extends Registry<JobPhaseListener> {
  async changed(jobs: JobPhaseChange[], trx: Db): Promise<void> {
    if (jobs.length === 0) return;
    for (const listener of this.entries) await listener(jobs, trx);
  }
}

/**
 * Rejects a job request (create fields, or a PATCH's `{ hints }`) that names something this server
 * or the job's project does not have: a 4xx Boom naming the field.
 */
export type JobRequestCheck = (projectId: string, request: Record<string, unknown>) => Promise<void>;

/**
 * Domains whose ids a job request may name (threads: `hints.coordination.thread_id`; the harness
 * registry: `harness`) have a check here; the jobs domain runs every check before it creates a job
 * from a request or changes its hints. Registered per container by the jobs plugin.
 */
export class JobRequestChecks extends Registry<JobRequestCheck> {
  async check(projectId: string, request: Record<string, unknown>): Promise<void> {
    for (const check of this.entries) await check(projectId, request);
  }
}

/** Where a new job would go: the project and its org (the caller's grant knows both, so no admission reads the project). */
export interface JobPlace {
  projectId: string;
  orgId: string;
}

/** Refuses (a 4xx Boom or a typed error) creating a new job in the project: an org over its monthly budget. */
export type JobAdmission = (place: JobPlace) => Promise<void>;

/**
 * Domains that may refuse new jobs (billing: the org's monthly budget) register here; the jobs
 * domain asks every one before it creates new work: a job from a request, a workflow invocation,
 * a job graph (a pipeline run). Registered by the jobs plugin.
 */
export class JobAdmissions extends Registry<JobAdmission> {
  async admit(place: JobPlace): Promise<void> {
    for (const admission of this.entries) await admission(place);
  }
}

/** One job of a graph: a create request (as `POST /projects/{id}/jobs` takes it) and the keys it waits for. */
export interface GraphJob {
  key: string;
  request: Record<string, unknown> & { description: string };
  depends_on: string[];
}

/**
 * Job creation and control for domains that lay work out as jobs (pipeline runs). Every method
 * runs in the caller's transaction. Registered by the jobs plugin.
 */
export interface JobGraphs {
  /**
   * One root job per entry (manifest defaults under each request), and a `blocked_by` relation
   * for every `depends_on` key. Returns key → job id. An invalid request is a 422 naming its key;
   * a graph JobAdmissions refuses (an org over its monthly budget) is refused before any is written.
   */
  create(creator: Creator, projectId: string, jobs: GraphJob[], trx: Db): Promise<Map<string, string>>;
  /** Cancels those of the jobs not finished yet; a running attempt ends. */
  cancel(jobIds: string[], reason: string, trx: Db): Promise<void>;
  /** Moves held jobs (phase backlog) to ready. */
  release(jobIds: string[], trx: Db): Promise<void>;
  /** The jobs in the Job response shape, in the order asked. */
  read(jobIds: string[]): Promise<Record<string, unknown>[]>;
  /** Locks the jobs' rows for the transaction, in id order (the order every writer takes them in). */
  lock(jobIds: string[], trx: Db): Promise<void>;
  /** Each existing job's phase and close reason, read in the transaction. */
  phases(jobIds: string[], trx: Db): Promise<Map<string, { phase: JobPhase; close_reason: string | null }>>;
}

/** A job attachment's bytes, for the jobs of one project only (resource hydration reads them). */
export interface JobAttachmentReader {
  read(projectId: string, jobId: string, name: string): Promise<{ content: Buffer; size_bytes: number; mime_type: string | null } | null>;
}

export const JobAttachmentReaderToken = Symbol('JobAttachmentReader') as InjectionToken<JobAttachmentReader>;

export const JobGraphsToken = Symbol('JobGraphs') as InjectionToken<JobGraphs>;

/** A code-host event about a pull request (`vcshost.pull_request` or `vcshost.pull_request_review`) as the spine stored it. */
export interface PullRequestEvent {
  project_id: string;
  type: string;
  payload_json: Record<string, unknown>;
  actor_id: string | null;
}

/**
 * Brings a code host's verdict on a job's pull request back to the job (merged, closed, approved,
 * changes requested). The jobs plugin fills it; the inbound webhooks call it for every stored or
 * redelivered pull request event, so it must be idempotent.
 */
export interface PullRequestFeedback {
  observe(event: PullRequestEvent): Promise<void>;
}

export const PullRequestFeedbackToken = Symbol('PullRequestFeedback') as InjectionToken<PullRequestFeedback>;
