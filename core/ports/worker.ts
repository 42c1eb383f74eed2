import type { InjectionToken } from 'tsyringe';

/** A claimed attempt as the claimer hands it over: the lease token fences every write that ends it. */
export interface ClaimedAttempt {
  jobId: string;
  projectId: string;
  attemptId: string;
  attemptNumber: number;
  leaseToken: string;
  leaseExpiresAt: Date;
}

/**
 * Where claimed attempts go: the worker role (in this process or at SVC_WORKER_URLS). The
 * orchestrator claims only while a dispatcher is registered, so no job is taken that nothing runs.
 */
export interface WorkerDispatcher {
  /** How many more attempts it accepts now. */
  capacity(): number;
  dispatch(attempt: ClaimedAttempt): Promise<void>;
}

export const WorkerDispatcherToken = Symbol('WorkerDispatcher') as InjectionToken<WorkerDispatcher>;
