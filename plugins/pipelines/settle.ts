import type { RunEventType, RunRow, StepRow, StepWithJob } from './repository.ts';
import { dependentsOf, isTerminal, runStatusFor, stepStatusFor, type RunStatus, type StepStatus } from './status.ts';

export type StepChange = Pick<StepRow, 'run_id' | 'name' | 'status'> & Partial<Pick<StepRow, 'started_at' | 'completed_at'>>;
export interface NewRunEvent {
  run_id: string;
  step_name: string | null;
  type: RunEventType;
  data: Record<string, unknown>;
}

/** What a run needs written: computed without I/O, so a claim batch's runs are written together. */
export interface Settlement {
  steps: StepChange[];
  events: NewRunEvent[];
  run: Partial<RunRow> | null;
  /** The step whose failure failed the run now (for `system.pipeline.failed`). */
  failed: StepWithJob | null;
  /** Jobs to cancel once everything else is written. */
  doomed: string[];
}

export const emptySettlement = (): Settlement => ({ steps: [], events: [], run: null, failed: null, doomed: [] });

/** Moves `step` (in place) to `status` and records the change and its event. */
export function moveStep(out: Settlement, step: StepWithJob, status: StepStatus, now: Date): void {
  if (step.status === status) return;
  const change: StepChange = { run_id: step.run_id, name: step.name, status };
  if (status === 'running' && !step.started_at) change.started_at = now;
  if (isTerminal(status)) change.completed_at = now;
  Object.assign(step, change);
  out.steps.push(change);
  out.events.push({
    run_id: step.run_id,
    step_name: step.name,
    type: 'step.status',
    data: { run_id: step.run_id, step_name: step.name, job_id: step.job_id, status, at: now },
  });
}

/** Moves the run to `status`, recording the change and its event (the failing step names the error). */
export function moveRun(out: Settlement, run: RunRow, status: RunStatus, steps: StepWithJob[], now: Date, cancelReason?: string | null): void {
  if (run.status === status) return;
  const changes: Partial<RunRow> = { status };
  if (!run.started_at && (status === 'running' || status === 'succeeded' || status === 'failed')) changes.started_at = now;
  if (isTerminal(status)) changes.completed_at = now;
  if (status === 'failed') {
    out.failed = steps.find((s) => s.status === 'failed') ?? null;
    changes.error_message = out.failed ? `step ${out.failed.name} failed: ${out.failed.job_close_reason ?? 'its job was cancelled'}` : 'a step failed';
  }
  if (cancelReason !== undefined) changes.cancel_reason = cancelReason;
  out.run = changes;
  out.events.push({
    run_id: run.id,
    step_name: null,
    type: 'run.status',
    data: { run_id: run.id, status, error_message: changes.error_message ?? run.error_message, at: now },
  });
}

/**
 * Brings a run's steps in line with their jobs, then the run with its steps: a step newly failed
 * cancels the steps that wait for it (and every approval not given yet, which could no longer be
 * given); a step whose dependencies all succeeded waits for approval when it asks for one.
 */
export function settleRun(run: RunRow, steps: StepWithJob[], now: Date): Settlement {
  const out = emptySettlement();
  const failed: StepWithJob[] = [];
  for (const step of steps) {
    if (isTerminal(step.status)) continue;
    const status = stepStatusFor(step.job_phase);
    if (status === 'pending' && step.status === 'awaiting_approval') continue;
    if (status === 'failed') failed.push(step);
    moveStep(out, step, status, now);
  }
  if (failed.length > 0 && !isTerminal(run.status)) {
    const waiting = dependentsOf(
      steps,
      failed.map((s) => s.name),
    );
    for (const step of steps) {
      if (isTerminal(step.status) || !(waiting.has(step.name) || (step.approval && !step.approved_at))) continue;
      moveStep(out, step, 'cancelled', now);
      out.doomed.push(step.job_id);
    }
  }
  const succeeded = new Set(steps.filter((s) => s.status === 'succeeded').map((s) => s.name));
  for (const step of steps) {
    if (step.approval && !step.approved_at && step.status === 'pending' && step.depends_on.every((d) => succeeded.has(d)))
      moveStep(out, step, 'awaiting_approval', now);
  }
  if (!isTerminal(run.status)) moveRun(out, run, runStatusFor(steps, run.started_at !== null), steps, now);
  return out;
}
