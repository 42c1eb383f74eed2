import type { InjectionToken } from 'tsyringe';

/** Time-based work (cron triggers, delayed retries, periodic housekeeping), shared by all orchestrators. */
export interface ScheduledJobHandler {
  (data: Record<string, unknown>): Promise<void>;
}

export interface DefineOptions {
  /** Jobs of this name that may run at once in this process. */
  concurrency?: number;
  /** Retry a failed run after these delays (ms), then give up. */
  retryDelaysMs?: number[];
}

export interface Scheduler {
  /** Register what a job name does; call before start(). */
  define(name: string, handler: ScheduledJobHandler, options?: DefineOptions): void;
  /** Run `name` every `intervalMs` (one schedule across all replicas). */
  every(intervalMs: number, name: string, data?: Record<string, unknown>): Promise<void>;
  /** Run `name` with cron semantics (standard 5-field expression, UTC), one schedule per `key`. */
  cron(expression: string, name: string, data?: Record<string, unknown>, key?: string): Promise<void>;
  /** Run `name` once at `when`. */
  schedule(when: Date, name: string, data?: Record<string, unknown>): Promise<void>;
  /** Remove schedules of `name` whose data matches. */
  cancel(name: string, data?: Record<string, unknown>): Promise<number>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The orchestrator's scheduler: registered by the kernel only where the orchestrator role runs; define handlers before the role starts. */
export const SchedulerToken = Symbol('Scheduler') as InjectionToken<Scheduler>;
