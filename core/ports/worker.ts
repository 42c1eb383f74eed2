import type { InjectionToken } from 'tsyringe';

/** A claimed attempt as the claimer hands it over: the lease token fences every write that ends it. */
export interface ClaimedAttempt {
  jobId: string;
  projectId: string;
  attemptId: string;
  attemptNumber: number;
  leaseToken: string;
  leaseExpiresAt: Date;
  /** The job's `hints.worker_type` (null or absent: the default worker). */
  workerType?: string | null;
  /** SVC_API_URL the dispatching orchestrator suggests for the job (a remote worker without its own api_url uses it). */
  apiUrl?: string | null;
}

/** The worker type jobs without `hints.worker_type` (or with an empty one) count as when claims skip full types. */
export const DEFAULT_WORKER_TYPE = 'default';

/**
 * Where claimed attempts go: the worker role (in this process or at SVC_WORKER_URLS). The
 * orchestrator claims only while a dispatcher is registered, so no job is taken that nothing runs.
 */
export interface WorkerDispatcher {
  /**
   * How many more attempts it accepts now. With `fullTypes`, how many it accepts of any one worker
   * type not listed there: the claimer takes at most this many in one batch, whatever their types.
   */
  capacity(): number;
  /**
   * Worker types (`hints.worker_type`, DEFAULT_WORKER_TYPE for jobs without one) that have no room
   * now: the claimer leaves their jobs ready, so a full worker does not hold up the others.
   */
  fullTypes?(): string[];
  dispatch(attempt: ClaimedAttempt): Promise<void>;
  /** Calls `listener` whenever an attempt of this process ends and frees room: the claimer looks for ready jobs then, not at its next poll. */
  onFreed?(listener: () => void): void;
}

export const WorkerDispatcherToken = Symbol('WorkerDispatcher') as InjectionToken<WorkerDispatcher>;
