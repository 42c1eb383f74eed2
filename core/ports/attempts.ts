import type { InjectionToken } from 'tsyringe';
import type { Db } from '../db/knex.ts';
import type { JobPhase } from './jobs.ts';
import { Registry } from '../registry.ts';

/** Fences every write of an attempt's runner: the job, the attempt, and the lease token of its claim. */
export interface AttemptLease {
  jobId: string;
  attemptId: string;
  leaseToken: string;
}

/** What a worker needs to run a claimed attempt: the job as stored, the attempt, and the job's project. */
export interface AttemptWork {
  job: {
    id: string;
    project_id: string;
    parent_id: string | null;
    title: string;
    description: string | null;
    phase: JobPhase;
    hints: Record<string, unknown>;
    git: Record<string, unknown> | null;
    /** `{mode, key}` as the job asked (workspace.mode job, session or isolated). */
    workspace: Record<string, unknown> | null;
    env_name: string | null;
    harness: Record<string, unknown>;
    env_overrides: Record<string, string> | null;
    resource_refs: Record<string, unknown>[];
    created_by: string | null;
  };
  /** `failed_before`: how many attempts right before this one failed (a harness profile falls back by it). */
  attempt: { id: string; attempt_number: number; status: string; failed_before: number };
  project: { id: string; org_id: string; slug: string; repo_url: string | null; branch: string };
  /** The workflow or pipeline run the job is a step of (null for any other job), with its steps that have finished. */
  run: { id: string; steps: RunStep[] } | null;
  /** A race's check command (docs/worker.md, "Rival attempts"), run in the workspace after the agent ends; absent outside a race or without one. */
  check_command?: string | null;
}

/** How the race's check command ended in an attempt's workspace. */
export interface CheckResult {
  command: string;
  exit_code: number | null;
  passed: boolean;
  duration_ms: number;
  /** The last lines of its output, secrets masked. */
  output_tail: string;
}

/** A finished step of a run, as the steps after it see it. */
export interface RunStep {
  name: string;
  job_id: string;
  depends_on: string[];
  phase: string;
  close_reason: string | null;
  /** Its latest attempt; null for a step that never ran (skipped). */
  attempt: {
    result_status: string | null;
    result_json: Record<string, unknown> | null;
    result_summary: string | null;
    git: Record<string, unknown> | null;
  } | null;
}

/** The spec's resolved git metadata of one attempt (stored as the attempt's `git`, promoted to the job's `resolved_git` on success). */
export interface ResolvedGit {
  resolved_ref: string | null;
  resolved_sha: string | null;
  resolved_branch: string | null;
  ref_source: string | null;
  pushed: boolean;
  commits: string[];
  /** Changes the worker left in the workspace without committing them (git.commit manual or never, or required after a failure), and why. */
  uncommitted?: { files: number; reason: string };
  /** Set for steps of a run and for reused workspaces (docs/workspaces.md): where the work started, what it merged and pushed. */
  workspace?: WorkspaceReport;
}

/** What an attempt's workspace reused and handed on (in its `git`, and in its receipt). */
export interface WorkspaceReport {
  /** job, session, isolated, or run (a fresh workspace on the run's line of work). */
  mode: string;
  /** Whether the attempt continued in a workspace an earlier attempt or job left. */
  reused: boolean;
  /** The commit the step started from (after merging the steps it depends on). */
  started_from: string | null;
  /** The run branch, for a step of a run. */
  run_branch: string | null;
  /** The branch the step commits on (its own: `<run branch>--<step>`). */
  step_branch: string | null;
  /** Steps merged in at start: name, branch and commit. */
  merged: { step: string; branch: string; sha: string }[];
  /** Branches pushed at the end and the commit each now points at. */
  pushed_to: { branch: string; sha: string }[];
  /** Files the step changed (from where it started to its last commit). */
  changed_files: string[];
  /** How a fresh checkout was made (docs/workspaces.md); absent when the attempt continued one, and on older attempts. */
  checkout?: CheckoutReport;
}

/** How a fresh checkout was made: copy-on-write over the cache's prepared checkout, sparse (workspace.sparse), shallow (git.depth). */
export interface CheckoutReport {
  copy_on_write: boolean;
  sparse: string[] | null;
  depth: number | null;
}

/** One file an attempt changed, as `git diff --numstat --name-status -M` says. */
export interface DiffFile {
  path: string;
  /** The path before a rename. */
  old_path?: string;
  status: 'added' | 'modified' | 'deleted' | 'renamed';
  /** Lines added and removed; 0 and 0 for a binary file. */
  additions: number;
  deletions: number;
  binary: boolean;
}

/**
 * What an attempt changed, as its worker recorded it when the attempt ended (docs/diffs.md): the
 * working tree as `git add -A` would take it (commits and uncommitted work alike, ignored and worker
 * files left out) against the commit the attempt started from. Bounded: at most `max_files` files
 * listed (the totals count every file) and `max_patch_bytes` of patch text, cut at a line end.
 */
export interface AttemptDiff {
  /** The commit the attempt started from (its resolved_sha; a step of a run: where it started after merging). */
  base_sha: string;
  /** The checkout's HEAD at the end (a commit of the attempt's, or the base when it committed nothing). */
  head_sha: string | null;
  /** Whether the diff holds changes that were left uncommitted (not in head_sha). */
  uncommitted: boolean;
  files: DiffFile[];
  /** Every file changed, listed or not. */
  files_total: number;
  additions: number;
  deletions: number;
  /** The unified patch (git diff -M -U3), at most `max_patch_bytes` bytes of it. */
  patch: string;
  /** The whole patch's size in bytes, as git wrote it. */
  patch_bytes: number;
  patch_truncated: boolean;
  /** The limits it was recorded under (worker.diff). */
  max_patch_bytes: number;
  max_files: number;
}

export interface AttemptCompletion {
  /** The `svc` object of the json-result block (or the worker's own verdict). */
  result: { status: 'success' | 'waiting' | 'failed'; summary?: string; reason?: string };
  result_json?: Record<string, unknown>;
  error?: string;
  git?: ResolvedGit | null;
  /** A failed result the job must not retry (a worker type that is not configured): the job fails for good whatever `max_attempts` allows. */
  final?: boolean;
  /** The race's check command's outcome, when the attempt ran one. */
  check?: CheckResult;
}

export type LogStream = 'stdout' | 'stderr' | 'system';

export interface LogLine {
  /** 1, 2, … per attempt, assigned by its one runner. */
  seq: number;
  stream: LogStream;
  line: string;
  at: Date;
}

/** Usage of one model call (never prompt or response text). */
export interface UsageCall {
  model: string;
  provider?: string;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens?: number;
  cache_write_tokens?: number;
  reasoning_tokens?: number;
  duration_ms?: number;
  /**
   * What the coding CLI said the call cost, in USD, when it computes a cost itself. Shown on the
   * receipt beside svc's own pricing; never billed (billing prices tokens with the rate card).
   */
  reported_cost_usd?: number;
}

/** The lease is gone (the attempt ended, was cancelled or reaped, or the token is stale): stop working. A typed domain error (core/errors.ts). */
export { LeaseLost } from '../errors.ts';

/**
 * The jobs domain's side of running an attempt, for workers in this process. Every write that
 * extends or ends the attempt is fenced by its lease token and throws `LeaseLost` without it.
 * Registered by the jobs plugin.
 */
export interface AttemptControl {
  /** The job, attempt and project; null when the attempt is not the job's. */
  load(jobId: string, attemptId: string): Promise<AttemptWork | null>;
  /** Extends the lease; returns the new expiry. */
  heartbeat(lease: AttemptLease, leaseSeconds?: number): Promise<Date>;
  /** Ends the attempt (Claims.complete semantics) and records its resolved git; returns the job's phase after. */
  complete(lease: AttemptLease, completion: AttemptCompletion): Promise<JobPhase>;
  /** Gives the job back (ready again); the attempt ends cancelled. */
  release(lease: AttemptLease): Promise<void>;
  /** Records `llm.call` usage; when it takes the attempt over the job's budget the attempt is ended (BUDGET_EXCEEDED) and the reason comes back. */
  recordUsage(lease: AttemptLease, calls: UsageCall[]): Promise<{ budgetExceeded: string | null }>;
  /**
   * Before a model call on the attempt's behalf (the inference gateway): null when it may go ahead;
   * else why not. An attempt that has ended gives its error; one whose usage has reached the job's
   * budget (hints.max_tokens / max_cost: any call would take it over) is ended now, BUDGET_EXCEEDED,
   * and that is the reason. Optional: an AttemptControl without it lets every call go ahead.
   */
  gateModelCall?(attempt: { jobId: string; attemptId: string }): Promise<string | null>;
  recordPhases(lease: AttemptLease, phases: { name: string; started_at: Date; ended_at: Date }[]): Promise<void>;
  /** Stores what the attempt changed (once: a second call for the attempt is ignored), under the lease; before `complete`. */
  recordDiff(lease: AttemptLease, diff: AttemptDiff): Promise<void>;
  /** Appends output lines (a line with a seq already stored is ignored); streams hear after commit. */
  appendLogs(jobId: string, attemptId: string, lines: LogLine[]): Promise<void>;
  /** Emits a `runner.*` event (source runner: only workers emit these) on the job's project. */
  runnerEvent(lease: AttemptLease, type: RunnerEventType, payload: Record<string, unknown>): Promise<void>;
  /** Emits one of the worker's own `system.*` events (source system) on the job's project, under the lease. */
  systemEvent(lease: AttemptLease, type: WorkerSystemEventType, payload: Record<string, unknown>): Promise<void>;
}

export type RunnerEventType = 'runner.started' | 'runner.progress' | 'runner.completed' | 'runner.failed';
export type WorkerSystemEventType = 'system.resource.hydration.started' | 'system.resource.hydration.completed' | 'system.resource.hydration.failed';

export const AttemptControlToken = Symbol('AttemptControl') as InjectionToken<AttemptControl>;

/** Lines just appended to an attempt's log, with the job's hints (a pipeline step's run id is there). */
export interface AppendedLogs {
  job_id: string;
  attempt_id: string;
  hints: Record<string, unknown>;
  lines: LogLine[];
}

export type AttemptLogListener = (appended: AppendedLogs, trx: Db) => Promise<void>;

/**
 * Domains that follow attempt output (pipeline run streams) register here; the jobs domain calls
 * every listener in the transaction that appends the lines. Registered per container by the jobs plugin.
 */
export class AttemptLogListeners extends Registry<AttemptLogListener> {
  async appended(appended: AppendedLogs, trx: Db): Promise<void> {
    if (appended.lines.length === 0) return;
    for (const listener of this.entries) await listener(appended, trx);
  }
}

/** An attempt that has just ended (however it ended), with its job, as other domains see it. */
export interface EndedAttempt {
  /** `harness`: the job's harness choice (`harness.harness` names it; none: the configured default). */
  job: { id: string; project_id: string; parent_id: string | null; title: string; hints: Record<string, unknown>; harness?: Record<string, unknown> };
  attempt: {
    id: string;
    attempt_number: number;
    status: string;
    result_status: string | null;
    result_json: Record<string, unknown> | null;
    result_summary: string | null;
    error: string | null;
    started_at: Date;
    ended_at: Date | null;
  };
  /** What its receipt says it cost. */
  cost: { base_cost_usd: number; billed_cost: { currency: string; amount: number } };
}

/** What a listener adds to the `system.job.attempt.completed` event: the coordination thread it posted to. */
export interface AttemptCompletionNote {
  thread_id?: string;
}

export type AttemptCompletionListener = (ended: EndedAttempt, trx: Db) => Promise<AttemptCompletionNote | void>;

/**
 * Domains that follow attempt endings (threads post a status summary) register here; the jobs domain
 * calls every listener in the transaction that ends the attempt, before it emits
 * `system.job.attempt.completed`, so what follows commits exactly once with it. Registered per
 * container by the jobs plugin.
 */
export class AttemptCompletionListeners extends Registry<AttemptCompletionListener> {
  async completed(ended: EndedAttempt, trx: Db): Promise<AttemptCompletionNote> {
    const note: AttemptCompletionNote = {};
    for (const listener of this.entries) Object.assign(note, (await listener(ended, trx)) ?? {});
    return note;
  }
}
