import type { InjectionToken } from 'tsyringe';

/** Message kinds. Coordination threads take the four of the spec; other threads also take plain `message`. */
export const COORDINATION_KINDS = ['status', 'directive', 'question', 'update'] as const;
export const MESSAGE_KINDS = ['message', ...COORDINATION_KINDS] as const;
export type MessageKind = (typeof MESSAGE_KINDS)[number];

/** The key of the coordination thread of a team dispatched under `parentJobId`. */
export const coordinationKey = (parentJobId: string) => `coord:job:${parentJobId}`;
export const COORDINATION_KEY_PREFIX = 'coord:job:';

/** What the worker knows of the job that is about to run. */
export interface CoordinatedJob {
  id: string;
  project_id: string;
  parent_id: string | null;
  hints: Record<string, unknown>;
}

export interface InboxMessage {
  id: string;
  seq: number;
  kind: MessageKind;
  body: string;
  author_type: string;
  author_id: string | null;
  job_id: string | null;
  reply_to: string | null;
  created_at: Date;
}

/** A job's coordination thread as its inbox shows it: the latest messages, oldest first. */
export interface CoordinationInbox {
  thread: { id: string; key: string | null; title: string | null; message_count: number };
  messages: InboxMessage[];
  /** Questions of the whole thread that no message answers (replies with `reply_to`). */
  open_questions: InboxMessage[];
}

/**
 * Which thread a job coordinates through, and what it holds: `hints.coordination.thread_id` when
 * set, else the `coord:job:<parent_id>` thread of its project. Registered by the threads plugin.
 */
export interface CoordinationThreads {
  /** Null when the job coordinates through no thread (or the one named is not of its project). */
  inbox(job: CoordinatedJob): Promise<CoordinationInbox | null>;
}

export const CoordinationThreadsToken = Symbol('CoordinationThreads') as InjectionToken<CoordinationThreads>;
